"""calibdash dashboard: `streamlit run app.py`.

The entry point only routes: pages live in pages/, the wiring they share in
pages/parts/ (one small module per concern), and every number comes from the
calibdash package. Whatever a page raises is shown as a plain message of its
kind (pages/parts/problems.py), never as a traceback.
"""
import streamlit as st

from pages.parts import memory, routing, runs, sidebar, url_state
from pages.parts.problems import show_problem

memory.use_system_allocator()           # Arrow's buffers go back to the system when freed (pages/parts/memory.py)
st.set_page_config(page_title="calibdash — classifier calibration", page_icon=":material/insights:", layout="wide")

pages = [
    st.Page("pages/data.py", title="Data", icon=":material/folder_open:", url_path="data"),
    st.Page("pages/explore.py", title="Explore", icon=":material/tune:", url_path="explore"),
    st.Page("pages/compare.py", title="Compare", icon=":material/compare:", default=True),
    st.Page("pages/segments.py", title="Groups & time", icon=":material/stacked_line_chart:", url_path="segments"),
    st.Page("pages/benchmark.py", title="Benchmark", icon=":material/leaderboard:", url_path="benchmark"),
    st.Page("pages/learn.py", title="Learn", icon=":material/school:", url_path="learn"),
    st.Page("pages/runs.py", title="Runs", icon=":material/bookmarks:", url_path="runs"),
]
page = st.navigation(pages)
wanted = st.session_state.pop(routing.DEEP_LINK, None)
if wanted:                      # a deep link that arrived before the router had run
    st.switch_page(wanted)
token = routing.ROUTED.set(True)
try:
    runs.gate()                          # with sign-in on, nothing is shown before it
    runs.open_from_link()                # ?run=<id>: the saved run's rows and view, then its page
    url_state.apply_url_state()          # a shared link's view, before anything reads the state
    with st.sidebar:
        st.markdown("### :material/insights: calibdash")
    sidebar.sidebar_summary()
    runs.sidebar_note()
    page.run()
except Exception as exc:  # noqa: BLE001 - the browser must never show a traceback
    show_problem(exc)
finally:
    routing.ROUTED.reset(token)
    memory.give_back()                   # what the run freed goes back to the system, not kept at its peak
