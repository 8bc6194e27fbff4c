"""Multi-party dialogue memory: worlds, dialogues, entries, game time and the structured prompt."""
