"""chat_core: token counting, window assembly, storage and the model client of Chat History Service."""

__version__ = "0.1.0"
