"""calibdash dashboard: `streamlit run app.py`.

The entry point only routes: pages live in pages/, shared wiring in
pages/common.py, and every number comes from the calibdash package.
"""
import logging

import streamlit as st

from calibdash.errors import DataError
from pages import common

st.set_page_config(page_title="calibdash — classifier calibration", page_icon=":material/insights:", layout="wide")

pages = [
    st.Page("pages/data.py", title="Data", icon=":material/folder_open:", url_path="data"),
    st.Page("pages/explore.py", title="Explore", icon=":material/tune:", url_path="explore"),
    st.Page("pages/compare.py", title="Compare", icon=":material/compare:", default=True),
    st.Page("pages/benchmark.py", title="Benchmark", icon=":material/leaderboard:", url_path="benchmark"),
    st.Page("pages/learn.py", title="Learn", icon=":material/school:", url_path="learn"),
]
page = st.navigation(pages)
wanted = st.session_state.pop(common.DEEP_LINK, None)
if wanted:                      # a deep link that arrived before the router had run
    st.switch_page(wanted)
common.apply_url_state()         # a shared link's view, before anything reads the state
with st.sidebar:
    st.markdown("### :material/insights: calibdash")
common.sidebar_summary()
token = common.ROUTED.set(True)
try:
    page.run()
except DataError as exc:
    st.error(f"**This cannot be done with the current data or settings:** {exc}")
except Exception as exc:  # noqa: BLE001 - the browser must never show a traceback
    logging.getLogger("calibdash.app").exception("page failed")
    st.error(f"**Something went wrong** ({type(exc).__name__}: {exc}). "
             "The details are in the server log; please report them.")
finally:
    common.ROUTED.reset(token)
