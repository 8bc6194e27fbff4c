"""Recall's items in the table: the lexical index (`index`) and the message vectors (`vector_items`)."""
