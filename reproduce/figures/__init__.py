"""The figures of rigel's report, one module per figure, all in one look
(style.py). Each module's draw() takes data that reproduce.py (or findings.py)
already computed for a table, so a figure and its table never disagree."""
