"""Streamlit building blocks shared by the pages (app_pages/): the project context, forms
built from typed configs that keep their values across pages, and safe display helpers. The
library (sga_core) never imports Streamlit; this package is its only Streamlit side."""
