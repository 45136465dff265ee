"""Where rigel wins: best own Hopper rung / vendor library for every (type,
shape) of the committed sweep, on a diverging colour scale centred at 1.00
(blue: rigel faster, red: the vendor faster), each cell printed with the rung
that reached it. Drawn from reproduce.vendor_sweep_data, the entries of
README's "Hopper rungs against cuBLAS across shapes" table."""
import math

from figures import style


def volume(shape):
    m, n, k = (int(x) for x in shape.split("x"))
    return (m * n * k, shape)


def draw(plt, entries, path, write_if_changed):
    """entries: vendor_sweep_data's second value. Returns True when drawn."""
    cells = {(e["dtype"], e["shape"]): e["best"] for e in entries if e["best"]}
    if not cells:
        return False
    from matplotlib.colors import Normalize
    types = sorted({t for t, _ in cells})
    shapes = sorted({s for _, s in cells}, key=volume)
    # Colour by log2 of the ratio, so 0.5x and 2x are equally strong; the
    # scale is symmetric around 1.00 and reaches the farthest cell.
    reach = max(abs(math.log2(b[0])) for b in cells.values())
    norm = Normalize(-reach, reach)
    cmap = plt.get_cmap("RdBu")
    fig, ax = plt.subplots(figsize=(2.0 * len(types) + 4.0, 0.42 * len(shapes) + 1.9))
    grid = [[math.log2(cells[(t, s)][0]) if (t, s) in cells else math.nan for t in types] for s in shapes]
    img = ax.imshow(grid, cmap=cmap, norm=norm, aspect="auto")
    for y, s in enumerate(shapes):
        for x, t in enumerate(types):
            best = cells.get((t, s))
            if not best:
                ax.text(x, y, "not measured", ha="center", va="center", fontsize=7, color=style.NOTE)
                continue
            ratio, rung, _ = best
            dark = abs(norm(math.log2(ratio)) - 0.5) > 0.3
            ax.text(x, y, f"{ratio:.2f}x  {rung.split('_')[0]}", ha="center", va="center", fontsize=8,
                    color="white" if dark else "black", fontweight="bold" if ratio >= 1 else "normal")
    ax.set_xticks(range(len(types)), types)
    ax.set_yticks(range(len(shapes)), [s.replace("x", " x ") for s in shapes])
    ax.set_xlabel("operand type (vendor: cuBLAS for bf16/f16, cuBLASLt for e4m3)")
    ax.set_ylabel("shape M x N x K (ordered by volume)")
    ax.tick_params(length=0)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    ticks = [t for t in (0.125, 0.25, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 2, 4, 8)
             if abs(math.log2(t)) <= reach + 1e-9]
    bar = fig.colorbar(img, ax=ax, ticks=[math.log2(t) for t in ticks], fraction=0.06, pad=0.03)
    bar.ax.set_yticklabels([f"{t:.2f}x" for t in ticks])
    bar.set_label("best own rung rate / vendor rate, same run (log scale)")
    ax.set_title("Where rigel wins: best own Hopper rung / vendor library")
    fig.tight_layout()
    style.save(fig, path, write_if_changed)
    plt.close(fig)
    return True
