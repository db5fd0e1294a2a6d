"""Runs: folders, status files, processes, the launcher and the queue."""
