"""Recall in the domain: the window's recalled messages, their upkeep on the stream, search and embeddings.

`in_window` picks what a window recalls, `hybrid` fuses BM25 with the embeddings, `across` searches the
caller's other conversations, `search` answers GET /memory/search, `upkeep` keeps the lexical index and
`embedding` the vectors (both on the table's stream). Scoring is `engine.recall`; storage `store.recall`.
"""
