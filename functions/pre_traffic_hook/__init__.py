"""The pre-traffic hook: the smoke test of a release's new versions (docs/operations.md)."""
