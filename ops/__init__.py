"""Operations code that ships beside the service's functions: the pre-traffic hook (docs/operations.md)."""
