-- ARGV: P, url, outcome, stream cap.
finish_url(ARGV[2], ARGV[3], ARGV[4])
return 1
