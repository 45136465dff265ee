"""The README's first table: each area's targets on the H200 machine, how many are met, and the ones not
met with what was measured, assembled from the same verdict lists as the target tables further down (so
the two cannot disagree).

Each section is (area, link, [(target, measured, met)]), met True, False, or None where nothing measured it.
"""


def block(sections):
    lines = ["| area | targets met | not met, or not measured: target (measured) |", "|---|---|---|"]
    total = met_all = 0
    for area, link, targets in sections:
        met = sum(ok is True for _, _, ok in targets)
        unmeasured = sum(ok is None for _, _, ok in targets)
        missed = [f"{t} ({m})" for t, m, ok in targets if ok is not True]
        count = f"{met} of {len(targets)}" + (f", {unmeasured} not measured" if unmeasured else "")
        lines.append(f"| [{area}]({link}) | {count} | {'; '.join(missed) or '-'} |")
        total += len(targets)
        met_all += met
    head = (f"Where rigel stands against its targets on the H200 machine: **{met_all} of {total} met**, from the "
            "committed CSVs (each area's own table, linked, has the figures and their sources).")
    return head + "\n\n" + "\n".join(lines)
