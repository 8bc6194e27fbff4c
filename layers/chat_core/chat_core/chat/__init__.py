"""Conversations: one module per operation (reads, the post, pins, summaries, retention)."""
