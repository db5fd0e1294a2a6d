"""SGA Workbench core library: Smoothed Gradient Ascent unlearning for language models.

Importing this package is cheap: it pulls in no torch or transformers. Heavy modules
(``sga_core.model.loading``, ``sga_core.train``, ...) import them on their own.
"""

__version__ = "0.1.0"
