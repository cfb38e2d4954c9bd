"""User-controlled text (file, column, class and group names, label values, error messages) shown as text.

Streamlit reads the body of ``st.markdown``, ``st.caption``, ``st.info``/``warning``/``error``/``success``,
``st.metric``'s label and value and widget labels as GitHub-flavoured Markdown, with its own additions: an
image ``![b](http://host/x.png)`` makes the browser fetch the address, a link or a bare ``www.`` address is
clickable, ``$...$`` is typeset as LaTeX, ``:red[...]`` colours, ``:material/icon:`` draws an icon, and a
backtick ends a code span. A value from the data is put into such a body only through :func:`md`.

:func:`md` puts a backslash before every ASCII punctuation character, which CommonMark reads as that
character itself (https://spec.commonmark.org/0.31.2/#backslash-escapes), so no Markdown, HTML, LaTeX or
Streamlit directive can start inside the value. Streamlit's front end leaves such escapes to the Markdown
parser: its LaTeX detection skips ``\\$``, and ``:material/`` is only rewritten when unescaped. Line breaks
are shown as ``↵``, so a value cannot start a new block (a heading, a list, an indented code block).
"""
from __future__ import annotations

import re
import string

from calibdash.figures.text import plain_figure

__all__ = ["md", "md_list", "chart", "LINE_BREAK"]

#: What a line break inside a value is shown as.
LINE_BREAK = "↵"
_PUNCTUATION = re.compile("([" + re.escape(string.punctuation) + "])")
_BREAKS = re.compile(r"\r\n|\r|\n")


def md(value) -> str:
    """``str(value)`` escaped so that Streamlit's Markdown shows it literally.

    >>> md("![b](http://127.0.0.1:9/x.png)")
    '\\\\!\\\\[b\\\\]\\\\(http\\\\:\\\\/\\\\/127\\\\.0\\\\.0\\\\.1\\\\:9\\\\/x\\\\.png\\\\)'
    """
    return _PUNCTUATION.sub(r"\\\1", _BREAKS.sub(LINE_BREAK, str(value)))


def md_list(values, sep: str = ", ") -> str:
    """The values, each escaped by :func:`md`, joined by ``sep``."""
    return sep.join(md(v) for v in values)


def chart(box, fig, **kwargs):
    """``box.plotly_chart(fig, **kwargs)`` with every string of ``fig`` plain text for plotly
    (:func:`calibdash.figures.text.plain_figure`): names from the data draw as themselves, never as a link."""
    return box.plotly_chart(plain_figure(fig), **kwargs)
