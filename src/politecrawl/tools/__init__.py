"""Operator tools: the command line, dashboard, complaints, log stats, reports."""
