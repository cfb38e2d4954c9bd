"""Streamlit wiring shared by the pages, one small module per concern.

Everything computed here is computed by ``calibdash``; these modules only key
caches, read and draw widgets, and turn results and errors into what a page
shows. Pages import the module they need (``from pages.parts import source``).
"""
