"""A user's data as a whole (PRV): erase it, export it, import it."""
