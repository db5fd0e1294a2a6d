"""Developer tools kept out of the library's import path (the demo corpus generator)."""
