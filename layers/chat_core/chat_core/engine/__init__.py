"""The pure engine: tokens, window selection, model limits, context, turn logs, tool pairing. No I/O."""
