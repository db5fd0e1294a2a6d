"""Data files (docs/spec.md#3-data-shapes): QA and text datasets, and the normal-answer table. A bad
file raises :class:`DataError` naming the file, the row and the field; nothing is half-loaded."""

from sga_core.data.limits import MAX_K
from sga_core.data.loaders import (
    DATASET_KINDS,
    SUPPORTED_EXTENSIONS,
    DataError,
    Dataset,
    detect_kind,
    file_rows_hash,
    load_dataset,
    load_qa,
    load_records,
    load_text,
    rows_hash,
    write_dataset,
)
from sga_core.data.normal_table import NORMAL_SOURCES, NormalAnswer, NormalTable

__all__ = [
    "DATASET_KINDS", "MAX_K", "NORMAL_SOURCES", "SUPPORTED_EXTENSIONS", "DataError", "Dataset",
    "NormalAnswer", "NormalTable", "detect_kind", "file_rows_hash", "load_dataset", "load_qa",
    "load_records", "load_text", "rows_hash", "write_dataset",
]
