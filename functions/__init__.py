"""The Lambda functions, one folder each (CodeUri functions/<name>/), and their table (`routes`)."""
