"""Storage: the only package in chat_core that talks to DynamoDB (single table, PynamoDB)."""
