"""chat_local: the local development server (`make run`) and the `chat` CLI client."""
