"""The report's sections as SQL (docs/dataset.md): each section is two files
in ``sql/`` beside this module, NAME.map.sql over the tables of some part of
the dataset and NAME.reduce.sql over the union of the map's results (the view
``partial``). Read by query.py (which maps the whole dataset at once) and
query_dask.py (which maps a partition per Dask task), so both run the same
queries.
"""

import os

SQL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sql")
# (section, SQL files' name, the report's JSON key)
SECTIONS = (
    ("Operators", "operators", "rows"),
    ("Steps", "steps", "steps"),
    ("Ranks", "ranks", "ranks"),
    ("Stragglers (step time)", "stragglers", "stragglers"),
    ("Collective arrivals", "arrivals", "collective_arrivals"),
)


def section_sql(name):
    """(map, reduce) SQL of a report section."""
    texts = []
    for half in ("map", "reduce"):
        with open(os.path.join(SQL_DIR, "%s.%s.sql" % (name, half))) as f:
            texts.append(f.read())
    return tuple(texts)
