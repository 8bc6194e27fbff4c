"""The HTTP edge: resolver, caller identity, request and response models, error codes to statuses."""
