"""Generating normal answers (SPEC 3). Each backend returns a NormalTable with K-1 answers per
forget row and its provenance."""
