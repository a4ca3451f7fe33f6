"""One self-contained HTML page: tables, figures (base64 PNG), run lists."""

from __future__ import annotations

import base64
import re

import jinja2
import pandas as pd

TEMPLATE = jinja2.Template("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Table 4 report: {{ experiment|e }}</title>
<style>
*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1360px;padding:0 16px;color:#222}
.box{max-width:100%;overflow-x:auto;margin:0.5em 0 1.5em}
table{border-collapse:collapse;font-size:0.85em}
td{white-space:nowrap}
table.wrap td{white-space:normal;overflow-wrap:normal;word-break:normal}
table.wrap{font-size:0.8em}
th,td{border-bottom:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
thead th{border-bottom:2px solid #444}
.legend,.meta{color:#555;font-size:0.9em;max-width:1100px}
img{max-width:100%;border:1px solid #eee}
code{background:#f4f4f4;padding:0 3px}
</style></head><body>
<h1>Table 4: experiment <code>{{ experiment|e }}</code></h1>
<p class="meta">Store <code>{{ uri|e }}</code>. {{ summary|e }}.
{% if filters %}Filters: {% for k, v in filters.items() %}<code>{{ k|e }}</code> in {{ v|join(", ")|e }}{% if not loop.last %}; {% endif %}{% endfor %}.{% endif %}
Generated {{ when|e }}.</p>
{% for title, table in tables %}<h2>{{ title|e }}</h2>
{% if intros.get(title) %}<p class="meta">{{ intros[title]|e }}</p>{% endif %}
<div class="box">{{ table }}</div>
{% if loop.first %}{% for f in lead %}<h3>{{ f.title|e }}</h3>
<img alt="{{ f.name|e }}" src="data:image/png;base64,{{ f.b64 }}">{% endfor %}{% endif %}{% endfor %}
<p class="legend">{{ legend|e }}</p>
{% if notes %}<ul class="legend">{% for n in notes %}<li>{{ n|e }}</li>{% endfor %}</ul>{% endif %}
<h2>Figures</h2>
{% for f in figures if f.name not in lead_names %}<h3>{{ f.title|e }}</h3>
{% if f.png %}<img alt="{{ f.name|e }}" src="data:image/png;base64,{{ f.b64 }}">
<p class="meta">Files: <code>{{ f.png.name }}</code>, <code>{{ f.pdf.name }}</code>; {{ f.n }} plotted points.</p>
{% else %}<p class="meta">{{ f.note|e }}</p>{% endif %}{% endfor %}
<h2>Runs not used ({{ n_skipped }})</h2>
<div class="box">{{ skipped }}</div>
<h2>Trials that did not end ok ({{ n_failed }})</h2>
<div class="box">{{ failed }}</div>
<h2>References beside our cells (same sizes)</h2>
<p class="meta">Numbers beside ours come from <code>reports/published.csv</code>,
only where our cell ran at the reference's n_train and n_test.
The paper's own Table 4 numbers are not included (not readable from the
sources we could reach); rows marked "measured on this machine class" are
anchor figures from <code>docs/anchors.md</code>, not published results.</p>
<div class="box">{{ references }}</div>
<h2>References at other sizes</h2>
<p class="meta">For the same datasets and methods, measured at other sizes: not comparable cell by cell.</p>
<div class="box">{{ other_references }}</div>
</body></html>
""")


def table_html(frame: pd.DataFrame, wrap: bool = False) -> str:
    """A frame as an HTML table, escaped; '(none)' when empty.

    ``wrap`` lets long cells wrap at spaces (wide tables); otherwise cells
    stay on one line and a table wider than the page scrolls in its box.
    """
    if frame is None or frame.empty:
        return "<p>(none)</p>"
    text = frame.to_html(index=False, escape=True, border=0, na_rep="",
                         classes="wrap" if wrap else None)
    return html_bold(text)


def html_bold(text: str) -> str:
    """``**x**`` (the tables' Markdown bold: the best cell of a row) as ``<b>x</b>``."""
    return re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)


def page(*, experiment, uri, summary, filters, when, tables, legend,
         figures, skipped, failed, references, notes=(),
         other_references=None, intros=None, lead_figures=()) -> str:
    """The HTML text.

    Parameters
    ----------
    tables : list of (str, pandas.DataFrame)
        Titled tables, in order.
    figures : list of reports.figures.Figure
        PNG files are read and embedded as base64.
    skipped, failed, references, other_references : pandas.DataFrame
    notes : list of str
        Footnotes shown under the legend.
    intros : dict, optional
        Table title -> a sentence shown under its heading (the verdict's).
    lead_figures : sequence of str, optional
        Names of the figures shown right after the first table (the verdict),
        in this order, not again among the figures.
    Other parameters are strings or a dict (``filters``) shown verbatim.
    """
    figs = []
    for f in figures:
        b64 = base64.b64encode(f.png.read_bytes()).decode() if f.png else ""
        figs.append(dict(name=f.name, title=f.title, png=f.png, pdf=f.pdf,
                         note=f.note, b64=b64, n=len(f.data)))
    by_name = {f["name"]: f for f in figs if f["png"]}
    lead = [by_name[n] for n in lead_figures if n in by_name]
    if not (tables and tables[0][0] in (intros or {})):
        lead = []  # no verdict table to put them under: they stay among the figures
    return TEMPLATE.render(
        intros=intros or {}, lead=lead, lead_names={f["name"] for f in lead},
        experiment=experiment, uri=uri, summary=summary, filters=filters,
        when=when, legend=legend, figures=figs,
        tables=[(t, table_html(df, wrap=True)) for t, df in tables],
        skipped=table_html(skipped, wrap=True), n_skipped=len(skipped),
        failed=table_html(failed, wrap=True), n_failed=len(failed),
        references=table_html(references, wrap=True), notes=list(notes),
        other_references=table_html(other_references, wrap=True))

