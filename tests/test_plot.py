"""python -m bandits.plot: output names, colours and styles, titles, write errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import matplotlib.colors as mcolors
import numpy as np
import pandas as pd
import pytest

from bandits.analysis import plot
from bandits.records import figures


def _metrics(agents=("bbb", "greedy"), seeds=(0, 1, 2), steps=(1, 5, 10)) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for a in agents:
        for s in seeds:
            r = e = 0.0
            for t in steps:
                dr, de = rng.uniform(0, 5), rng.uniform(0, 3)
                r, e = r + dr, e + de
                rows.append({"agent": a, "seed": s, "step": t, "action": 0, "reward": 0.0,
                             "regret": dr, "expected_regret": de, "cumulative_regret": r,
                             "cumulative_expected_regret": e})
    return pd.DataFrame(rows)


def _run_dir(path: Path, env: str | None = "mushroom", agents=("bbb", "greedy"),
             seeds=(0, 1, 2), steps=(1, 5, 10)) -> Path:
    """A run's folder: its metrics.csv and (with an ``env``) its config.json, the record
    the file is checked against."""
    path.mkdir(parents=True)
    _metrics(agents, seeds, steps).to_csv(path / "metrics.csv", index=False)
    if env is not None:
        (path / "config.json").write_text(json.dumps(
            {"env": env, "agent": list(agents), "seed": seeds[0], "seeds": len(seeds),
             "seed_list": list(seeds), "steps": steps[-1]}))
    return path


def _same_color(a, b) -> bool:
    return np.allclose(mcolors.to_rgb(a), mcolors.to_rgb(b))


def _error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("bandits.plot: error: ")
    assert "Traceback" not in err
    return lines[0]


def test_expected_keeps_regret_png(tmp_path, capsys):
    d = _run_dir(tmp_path / "run")
    assert plot.main([str(d)]) == 0
    before = (d / "regret.png").read_bytes()
    assert (d / "regret.pdf").is_file()
    assert plot.main([str(d), "--expected"]) == 0
    assert (d / "regret.png").read_bytes() == before
    assert (d / "expected_regret.png").is_file()
    assert (d / "expected_regret.pdf").is_file()
    assert (d / "expected_regret.png").read_bytes() != before
    assert not list(d.glob(".*.tmp"))  # the atomic writes left no temporary file


def test_combined_colors_styles_labels(tmp_path):
    m1 = _metrics(agents=("bbb", "greedy", "mystery", "other"))
    m2 = _metrics(agents=("bbb", "greedy", "mystery", "other"))
    metrics = pd.concat([m1.assign(run="a"), m2.assign(run="b")], ignore_index=True)
    fig = figures.regret_figure(metrics)
    try:
        ax = fig.axes[0]
        lines, bands = ax.lines, ax.collections
        assert len(lines) == len(bands) == 8
        for line, band in zip(lines, bands):
            assert _same_color(band.get_facecolor()[0][:3], line.get_color())
        by_label = {ln.get_label(): ln for ln in lines}
        bbb_a = by_label["Bayes by Backprop (Thompson) [a] (n=3)"]
        bbb_b = by_label["Bayes by Backprop (Thompson) [b] (n=3)"]
        assert _same_color(bbb_a.get_color(), figures.COLORS["bbb"])
        assert _same_color(bbb_b.get_color(), figures.COLORS["bbb"])
        assert bbb_a.get_linestyle() != bbb_b.get_linestyle()
        assert _same_color(by_label["greedy [b] (n=3)"].get_color(), figures.COLORS["greedy"])
        # agents without a COLORS entry: distinct colours, shared across runs
        mys = [by_label[f"mystery [{r}] (n=3)"].get_color() for r in "ab"]
        oth = [by_label[f"other [{r}] (n=3)"].get_color() for r in "ab"]
        assert _same_color(*mys) and _same_color(*oth)
        assert not _same_color(mys[0], oth[0])
        for c in (mys[0], oth[0]):
            assert not _same_color(c, figures.COLORS["bbb"])
            assert not _same_color(c, figures.COLORS["greedy"])
    finally:
        plot.plt.close(fig)


def test_each_agent_has_its_own_colour_and_line_style():
    """Every agent of the registry: a colour and a line style matplotlib draws, no two
    agents alike in both, and the near colours of the greedy family apart in style."""
    from matplotlib.lines import Line2D

    from agents import SPECS

    pairs = [(mcolors.to_hex(s.color), s.linestyle) for s in SPECS.values()]
    assert len(set(pairs)) == len(pairs)
    for s in SPECS.values():
        Line2D([], [], ls=s.linestyle)  # a style matplotlib knows, or ValueError
    assert len({SPECS[a].linestyle for a in ("greedy", "eps1", "eps5")}) == 3


def test_one_run_draws_each_agent_in_its_specs_style():
    fig = figures.regret_figure(_metrics(agents=("bbb", "eps1", "eps5", "mystery")))
    try:
        by_label = {ln.get_label(): ln for ln in fig.axes[0].lines}
        for agent in ("bbb", "eps1", "eps5"):
            line = by_label[f"{figures.LABELS[agent]} (n=3)"]
            assert line.get_linestyle() == _drawn_style(figures.STYLES[agent])
            assert _same_color(line.get_color(), figures.COLORS[agent])
        assert by_label["mystery (n=3)"].get_linestyle() == "-"
    finally:
        plot.plt.close(fig)


def _drawn_style(style: str) -> str:
    """How a drawn line reports the style it was given."""
    from matplotlib.lines import Line2D

    return Line2D([], [], ls=style).get_linestyle()


def test_combined_cli(tmp_path, capsys):
    d1 = _run_dir(tmp_path / "r1")
    d2 = _run_dir(tmp_path / "r2", env=None)
    out = tmp_path / "both.png"
    assert plot.main([str(d1), str(d2), "--out", str(out)]) == 0
    assert out.is_file() and not out.with_suffix(".pdf").exists()  # only the file named
    capsys.readouterr()
    # without --out: beside the first run, named for the runs, with its PDF twin
    assert plot.main([str(d1), str(d2)]) == 0
    default = tmp_path / "regret_r1+r2.png"
    assert default.is_file() and default.with_suffix(".pdf").is_file()
    assert str(default) in capsys.readouterr().out
    assert plot.main([str(d1), str(d2), "--expected"]) == 0
    assert (tmp_path / "expected_regret_r1+r2.png").is_file()
    many = [_run_dir(tmp_path / f"a-rather-long-run-name-{k}") for k in range(8)]
    assert figures.combined_name(many, "regret").name == (
        "regret_" + "+".join(d.name for d in many[:4]) + "+4-more.png")


def test_linestyles_cycle():
    metrics = pd.concat([_metrics(agents=("bbb",)).assign(run=str(i)) for i in range(5)],
                        ignore_index=True)
    fig = figures.regret_figure(metrics)
    try:
        styles = [ln.get_linestyle() for ln in fig.axes[0].lines]
    finally:
        plot.plt.close(fig)
    assert len(set(styles[:4])) == 4 and styles[4] == styles[0]


def test_redraw_title(tmp_path, monkeypatch):
    d = _run_dir(tmp_path / "run", seeds=(3, 4), steps=(1, 7, 42))
    titles = []
    real = figures.regret_figure

    def spy(*args, **kw):
        fig = real(*args, **kw)
        titles.append(fig.get_suptitle())
        return fig

    monkeypatch.setattr(figures, "regret_figure", spy)
    assert plot.main([str(d)]) == 0
    assert titles[-1] == "mushroom: 2 seeds, 42 steps"  # as bandits.run draws it
    assert figures.run_title(d, pd.read_csv(d / "metrics.csv")) == "mushroom: 2 seeds, 42 steps"
    (d / "config.json").unlink()
    assert plot.main([str(d)]) == 0
    assert titles[-1] == ""


def test_out_missing_dir(tmp_path, capsys):
    d = _run_dir(tmp_path / "run")
    out = tmp_path / "nope" / "f.png"
    assert plot.main([str(d), "--out", str(out)]) == 2
    line = _error_line(capsys)
    assert f"cannot write {out}:" in line and "mkdir" in line
    assert not out.parent.exists()


def test_out_read_only_dir(tmp_path, capsys):
    d = _run_dir(tmp_path / "run")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as root: a 0o500 directory is still writable")
        out = ro / "f.png"
        assert plot.main([str(d), "--out", str(out)]) == 2
        assert f"cannot write {out}:" in _error_line(capsys)
        assert not list(ro.iterdir())
    finally:
        ro.chmod(0o700)


def test_write_error_keeps_old_file(tmp_path, capsys, monkeypatch):
    d = _run_dir(tmp_path / "run")
    assert plot.main([str(d)]) == 0
    before = (d / "regret.png").read_bytes()
    capsys.readouterr()

    def fail(*args, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(figures, "save_figure", fail)  # one run's figure: the run's own
    monkeypatch.setattr(plot, "save_figure", fail)  # drawing; several runs': the command's
    assert plot.main([str(d)]) == 2
    line = _error_line(capsys)
    assert f"cannot write {d / 'regret.png'}: No space left on device" in line
    assert (d / "regret.png").read_bytes() == before


@pytest.mark.parametrize("drop", ["step", "cumulative_regret"])
def test_missing_columns(tmp_path, capsys, drop):
    d = tmp_path / "run"
    d.mkdir()
    _metrics().drop(columns=[drop]).to_csv(d / "metrics.csv", index=False)
    assert plot.main([str(d)]) == 2
    assert drop in _error_line(capsys)
    assert not (d / "regret.png").exists()


def test_no_metrics(tmp_path, capsys):
    assert plot.main([str(tmp_path)]) == 2
    _error_line(capsys)
    (tmp_path / "metrics.csv").write_text("")
    assert plot.main([str(tmp_path)]) == 2
    _error_line(capsys)


def test_plot_regret_as_run_calls_it(tmp_path):
    figures.plot_regret(_metrics(), tmp_path / "regret.png", log_y=True, title="t: 3 seeds")
    assert (tmp_path / "regret.png").is_file() and (tmp_path / "regret.pdf").is_file()


def test_figure_6_on_a_log_axis_bands_quartiles_starts_near_100_and_ranks_the_legend():
    import matplotlib.pyplot as plt
    import numpy as np

    from bandits.records.figures import regret_figure

    rng = np.random.default_rng(0)
    steps = np.arange(1, 201)
    rows = []
    for agent, slope in (("bbb", 20.0), ("greedy", 30.0), ("eps5", 60.0), ("eps1", 40.0)):
        for seed in range(5):
            total = np.cumsum(rng.uniform(0, 2 * slope, steps.size))
            rows += [{"agent": agent, "seed": seed, "step": int(t),
                      "cumulative_regret": float(v)} for t, v in zip(steps, total)]
    metrics = pd.DataFrame(rows)
    fig = regret_figure(metrics, log_y=True)
    try:
        ax = fig.axes[0]
        assert ax.get_ylim()[0] == 100.0
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert [lab.split(" (")[0] for lab in labels] == [  # lowest at the end first
            "Bayes by Backprop", "greedy", "1% greedy", "5% greedy"]
        # the band of the first agent drawn (bbb) is its seeds' interquartile range
        band = ax.collections[0].get_paths()[0].vertices
        wide = metrics[metrics["agent"] == "bbb"].pivot(index="step", columns="seed",
                                                        values="cumulative_regret")
        assert np.isclose(band[:, 1].max(), wide.quantile(0.75, axis=1).max())
        assert np.isclose(band[1:-1, 1].min(), wide.quantile(0.25, axis=1).min())
    finally:
        plt.close(fig)


def test_the_subtitle_says_what_a_band_is_over_how_many_seeds_and_that_it_is_no_test(
        tmp_path):
    import matplotlib.pyplot as plt

    mixed = _metrics(seeds=(0, 1)).query("agent == 'bbb' or seed == 0")  # 2 and 1 seeds
    said = {}
    for name, metrics, log_y in (("3", _metrics(), False), ("1", _metrics(seeds=(7,)), False),
                                 ("mixed", mixed, False), ("log", _metrics(), True)):
        fig = figures.regret_figure(metrics, log_y=log_y)
        said[name] = fig.axes[0].get_title(loc="left")
        plt.close(fig)
    assert said["3"] == ("line: mean over 3 seeds; legend: lowest at the end first\n"
                         "bands: ±1 standard error over 3 seeds; not a test of difference "
                         "(the seeds are paired)")
    assert said["1"].startswith("line: the one seed's regret; no band (one seed has no "
                                "standard error)")
    assert "over each line's n seeds; not a test of difference" in said["mixed"]
    assert said["log"] == ("line: median over seeds; band: 25-75 % of seeds; legend: lowest "
                           "at the end first")  # the shipped log figures' words, as they were
    d = _run_dir(tmp_path / "one", seeds=(7,))
    assert figures.run_title(d, pd.read_csv(d / "metrics.csv")) == "mushroom: 1 seed, 10 steps"


def test_a_combined_figure_puts_its_legend_below_the_axes():
    import matplotlib.pyplot as plt

    from bandits.records.figures import regret_figure

    metrics = pd.concat([_metrics().assign(run="20261126-101010-mushroom-quick"),
                         _metrics().assign(run="20261126-111111-mushroom-quick")])
    fig = regret_figure(metrics)
    try:
        fig.canvas.draw()
        ax = fig.axes[0]
        assert ax.get_legend() is None and len(fig.legends) == 1
        legend_box = fig.legends[0].get_window_extent()
        assert legend_box.y1 <= ax.get_window_extent().y0  # entirely below the axes
    finally:
        plt.close(fig)


def test_panels_draw_each_run_in_its_own_titled_panel(tmp_path):
    import pandas as pd

    from bandits.records import figures

    rows = [{"agent": a, "seed": s, "step": t, "cumulative_regret": float(t * (1 + s + i))}
            for i, a in enumerate(["bbb", "greedy"]) for s in range(3) for t in (1, 5, 10)]
    frames = [pd.DataFrame(rows), pd.DataFrame(rows)]
    fig = figures.panels_figure(frames, ["the paper's", "with a memory"], log_y=True,
                             labels=[{"bbb": "Bayes by Backprop (mean of 2 samples)"}, {}])
    try:
        axes = fig.get_axes()
        assert [ax.get_title() for ax in axes] == ["the paper's", "with a memory"]
        first = [t.get_text() for t in axes[0].get_legend().get_texts()]
        assert first[0].startswith("Bayes by Backprop (mean of 2 samples)")  # lowest first
        # on a log axis the line is the median of the seeds, inside its band
        line = axes[1].get_lines()[0]
        assert list(line.get_ydata()) == [2.0, 10.0, 20.0]  # median of t * (1, 2, 3)
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_panels_need_a_title_per_run(tmp_path, capsys):
    from bandits.analysis import plot

    d = _run_dir(tmp_path / "run")
    assert plot.main([str(d), str(d), "--panels", "--titles", "one", "--out",
                      str(tmp_path / "f.png")]) == 2
    assert "one --titles entry per DIR" in capsys.readouterr().err


def test_every_figure_module_draws_in_the_shared_style_and_leaves_the_users_settings():
    import matplotlib
    import matplotlib.pyplot as plt

    from bandits.analysis import diagnose
    from bandits.core.style import STYLE
    from bandits.experiments import sweep_results
    from bandits.mnist.reports import figures as mnist_figures
    from bandits.tools import regression

    # every function that draws a shipped figure is wrapped by bandits.core.style.styled
    for draw in (figures.regret_figure, figures.panels_figure, diagnose.draw,
                 sweep_results.plot, regression.plot, mnist_figures.plot_run,
                 mnist_figures.plot_weight_hists, mnist_figures.plot_snr,
                 mnist_figures.plot_test_errors):
        assert hasattr(draw, "__wrapped__"), draw  # functools.wraps of styled
    before = matplotlib.rcParams["font.size"]
    fig = figures.regret_figure(_metrics())
    ax = fig.axes[0]
    assert not ax.spines["top"].get_visible() and not ax.get_legend().get_frame_on()
    assert ax.xaxis.label.get_fontsize() == STYLE["axes.labelsize"]
    plt.close(fig)
    assert matplotlib.rcParams["font.size"] == before  # the user's own settings stay


def test_a_crowded_figure_ranks_the_last_step_in_a_panel_beside_the_curves():
    agents = ("bbb", "greedy", "eps1", "eps5", "uniform", "linucb", "neuralts")
    metrics = _metrics(agents=agents)
    fig = figures.regret_figure(metrics)
    try:
        curves, rank = fig.axes
        texts = [t.get_text() for t in fig.legends[0].get_texts()]  # lowest first
        by_label = {ln.get_label(): ln.get_gid() for ln in curves.lines}
        order = [by_label[t] for t in texts]
        assert [t.get_text() for t in rank.get_yticklabels()] == [
            figures.LABELS[a] for a in order]
        last = metrics[metrics["step"] == metrics["step"].max()]
        means = last.groupby("agent")["cumulative_regret"].mean()
        points = [ln for ln in rank.lines if ln.get_marker() == "o"]
        assert [float(p.get_xdata()[0]) for p in points] == pytest.approx(
            [means[a] for a in order])
        assert list(means[order]) == sorted(means)  # lowest at the top
        assert len(fig.legends) == 1
    finally:
        plot.plt.close(fig)


def test_figure_2_draws_the_mean_over_the_seeds_with_a_band_from_lowest_to_highest(
        tmp_path, monkeypatch):
    from bandits.mnist.reports import figures as mnist_figures

    errors = {0: [3.0, 2.0, 1.5], 1: [4.0, 2.5, 1.2], 2: [3.5, 1.5, 1.8]}
    paths = []
    for seed, errs in errors.items():
        p = tmp_path / f"seed={seed}" / "epochs.csv"
        p.parent.mkdir()
        p.write_text("epoch,test_error\n" + "".join(f"{e + 1},{v}\n"
                                                    for e, v in enumerate(errs)))
        paths.append(p)
    drawn = []
    monkeypatch.setattr(mnist_figures, "save_figure", lambda fig, path, dpi: drawn.append(fig))
    mnist_figures.plot_test_errors({"SGD": paths, "dropout": paths[:1]}, tmp_path / "f.png")
    (ax,) = drawn[0].axes
    many, one = ax.lines
    assert many.get_label() == "SGD (3 seeds)" and one.get_label() == "dropout (1 seed)"
    assert list(many.get_ydata()) == pytest.approx(np.mean(list(errors.values()), axis=0))
    (band,) = ax.collections  # only the row of several seeds has a band
    ys = band.get_paths()[0].vertices[:, 1]
    assert min(ys) == pytest.approx(1.2) and max(ys) == pytest.approx(4.0)
    assert "band: lowest to highest seed" in ax.get_title()
    plot.plt.close(drawn[0])


def test_the_mnist_figures_give_one_kind_of_model_one_colour(tmp_path, monkeypatch):
    """Figures 2-4 of a report colour each line by its model's kind (the Gaussian is the
    same colour in all three), and a figure of two rows of one kind keeps them apart."""
    from bandits.mnist.reports import figures as mnist_figures
    from bandits.mnist.reports import report as reporting

    rows = pd.DataFrame({"kind": ["sgd", "bbb-gaussian", "bbb-mixture"],
                         "settings": [{"epochs": 60}, {"epochs": 60}, {"epochs": 300}],
                         "name": ["a", "b", "c"]})
    colors = reporting._kind_colors(rows)
    k = mnist_figures.KIND_COLORS
    assert colors == {"SGD, 60 epochs": k["sgd"], "BBB, Gaussian prior, 60 epochs":
                      k["bbb-gaussian"], "BBB, scale-mixture prior, 300 epochs":
                      k["bbb-mixture"]}
    assert len(set(k.values())) == len(k)
    two = pd.concat([rows, rows.iloc[[1]].assign(name="d")], ignore_index=True)
    assert "BBB, Gaussian prior, 60 epochs (b)" not in reporting._kind_colors(two)
    # the drawing functions use the colour they are given
    p = tmp_path / "epochs.csv"
    p.write_text("epoch,test_error\n1,2.0\n2,1.5\n")
    drawn = []
    monkeypatch.setattr(mnist_figures, "save_figure", lambda fig, path, dpi: drawn.append(fig))
    mnist_figures.plot_test_errors({"x": [p], "y": [p]}, tmp_path / "f.png",
                                   {"y": k["bbb-gaussian"]})
    x, y = drawn[0].axes[0].lines
    assert mcolors.to_hex(y.get_color()) == k["bbb-gaussian"].lower()
    assert mcolors.to_hex(x.get_color()) != k["bbb-gaussian"].lower()
    plot.plt.close(drawn[0])
