"""The nccl_tune decision rule (tuning.py) on a series recorded on the GPU machine (2x H200, NVLink,
NCCL 2.28.9, nccl-tests 2.19.6: tests/unit/fixtures/nccl_tune/search_channels_h200x2.json, the runner's
own record of docs/benchmarks/2026-11-23-h200x2-tune/search-channels) and on small made-up series for
the edges of the rule."""
import json

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import tuning

MIB = 1 << 20


@pytest.fixture
def recorded(fixture_file):
    with open(fixture_file("nccl_tune", "search_channels_h200x2.json")) as handle:
        return json.load(handle)


def test_the_recorded_search_reads_every_run(recorded):
    table = tuning.collect(recorded["runs"])
    assert sorted(table) == ["all_gather", "all_reduce", "reduce_scatter"]
    assert sorted(table["all_reduce"]) == ["NCCL_MIN_NCHANNELS=24", "NCCL_MIN_NCHANNELS=32", "default"]
    assert len(table["all_reduce"]["default"][1 << 30]) == 6  # 2 candidates x 3 repeats, each next to a default
    assert len(table["all_reduce"]["NCCL_MIN_NCHANNELS=32"][1 << 30]) == 3


def test_32_channels_gain_over_the_noise_but_lose_at_small_sizes_so_they_are_refused(recorded):
    decisions = tuning.judge(tuning.collect(recorded["runs"]))
    ar = decisions["all_reduce"]["NCCL_MIN_NCHANNELS=32"]
    assert ar["gain"] > 1.05 and ar["gain"] - 1 > ar["noise"]
    assert ar["worst_size"] == MIB and ar["worst_ratio"] < 0.98
    assert ar["kept"] is False and ar["why"].startswith("loses 3.2 % at 1 MiB")
    ag = decisions["all_gather"]["NCCL_MIN_NCHANNELS=32"]
    assert ag["kept"] is True  # all_gather alone would keep it
    assert decisions["all_reduce"]["NCCL_MIN_NCHANNELS=24"]["why"].startswith("loses 2.3 % at 1 MiB")
    env, winners = tuning.combine(decisions, {"NCCL_MIN_NCHANNELS=24": {"NCCL_MIN_NCHANNELS": "24"},
                                              "NCCL_MIN_NCHANNELS=32": {"NCCL_MIN_NCHANNELS": "32"}})
    assert (env, winners) == ({}, [])  # a winner must win on every collective it was measured on


def test_the_report_says_nothing_beat_the_defaults(recorded):
    result = tuning.report(recorded)
    assert result["env"] == {} and result["confirmed"] is None
    text = tuning.markdown(result)
    assert "Environment to use: NCCL's defaults (no setting beat them)" in text
    assert "| all_reduce | `NCCL_MIN_NCHANNELS=32` | +5.3 % |" in text


def series(values_by_size):
    return dict((size, list(values)) for size, values in values_by_size.items())


def test_a_gain_inside_the_noise_is_not_kept():
    default = series({16 * MIB: [100, 104, 98], 64 * MIB: [200, 206, 196]})
    candidate = series({16 * MIB: [103], 64 * MIB: [205]})
    numbers = tuning.compare(default, candidate)
    assert round(numbers["noise"], 3) == 0.06  # (104 - 98) / 100
    assert tuning.verdict(numbers) == (False, "gain +2.7 % does not beat the defaults' run-to-run spread of 6.0 %")


def test_a_loss_beyond_two_percent_at_a_guarded_size_vetoes_a_big_gain():
    default = series({MIB: [50, 50], 16 * MIB: [100, 100], 1024 * MIB: [300, 300]})
    candidate = series({MIB: [48.5], 16 * MIB: [120], 1024 * MIB: [330]})
    kept, why = tuning.verdict(tuning.compare(default, candidate))
    assert not kept and why == "loses 3.0 % at 1 MiB (more than 2 %)"
    candidate[MIB] = [49.2]  # -1.6 %: inside the guard
    assert tuning.verdict(tuning.compare(default, candidate))[0] is True
    # Below the guard (512 KiB) a loss does not count.
    default[512 << 10] = [30, 30]
    candidate[512 << 10] = [10]
    assert tuning.verdict(tuning.compare(default, candidate))[0] is True


def test_winners_combine_one_value_per_variable_the_better_one():
    decisions = {"all_reduce": {
        "A=16": {"kept": True, "gain": 1.06}, "A=32": {"kept": True, "gain": 1.09}, "B=x": {"kept": True, "gain": 1.03},
        "C=y": {"kept": False, "gain": 1.20}}}
    env, chosen = tuning.combine(decisions, {"A=16": {"NCCL_A": "16"}, "A=32": {"NCCL_A": "32"},
                                             "B=x": {"NCCL_B": "x"}, "C=y": {"NCCL_C": "y"}})
    assert env == {"NCCL_A": "32", "NCCL_B": "x"} and chosen == ["A=32", "B=x"]


def test_the_confirmation_decides_the_environment():
    def runs(name, env, values):
        out = []
        for collective in ("all_reduce",):
            for value in values:
                rows = "\n".join("%12d %12d float sum -1 100.0 %.2f %.2f 0 100.0 %.2f %.2f 0" % (
                    size, size // 4, value * f, value * f, value * f, value * f)
                    for size, f in ((MIB, 0.2), (16 * MIB, 0.6), (256 * MIB, 0.9), (1024 * MIB, 1.0)))
                text = "# nThread 1 nGpus 2 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20\n" \
                       "#       size         count      type   redop    root     time   algbw   busbw #wrong" \
                       "     time   algbw   busbw #wrong\n" + rows + "\n# Avg bus bandwidth    : 1\n"
                out.append({"collective": collective, "candidate": name, "repeat": 0, "rc": 0, "stdout": text, "env": env})
        return out
    search = {"runs": runs("default", {}, [300, 301]) + runs("NCCL_X=1", {"NCCL_X": "1"}, [330, 331])}
    confirm = {"runs": runs("default", {}, [300, 302, 301]) + runs("tuned", {"NCCL_X": "1"}, [329, 331, 330])}
    result = tuning.report(search, confirm)
    assert result["combined_env"] == {"NCCL_X": "1"}
    assert result["confirmed"]["chosen"] == "tuned" and result["env"] == {"NCCL_X": "1"}
    figure = result["confirmed"]["figures"]["tuned"]["all_reduce"]
    assert round(figure["gain"], 3) == 1.096 and figure["kept"]
    failing = {"runs": runs("default", {}, [300, 330]) + runs("tuned", {"NCCL_X": "1"}, [305, 306])}
    assert tuning.report(search, failing)["env"] == {}  # the fresh comparison did not confirm it


@pytest.mark.parametrize("items, message", [
    ([{"env": {"LD_PRELOAD": "x"}}], "not an NCCL_\\* variable name"),
    ([{"env": {"NCCL_ALGO": "Ring; rm -rf /"}}], "not one plain word"),
    ([{"name": "default", "env": {"NCCL_ALGO": "Ring"}}], "used twice"),
    ([], "non-empty list"),
])
def test_bad_candidates_are_refused_with_their_name(items, message):
    with pytest.raises(ValueError, match=message):
        tuning.check_candidates(items)


def test_the_search_space_grows_with_rdma_and_drops_tree_on_two_gpus():
    plain = [c["name"] for c in tuning.candidates(False, 2)]
    assert "NCCL_ALGO=Tree" not in plain and "NCCL_MIN_NCHANNELS=32" in plain
    rdma = [c["name"] for c in tuning.candidates(True, 8)]
    assert {"NCCL_IB_QPS_PER_CONNECTION=4", "NCCL_NET_GDR_LEVEL=PHB", "NCCL_ALGO=Tree"} <= set(rdma)


def test_failed_runs_are_counted_shown_and_left_out_of_the_decision(recorded):
    """Four of the recorded runs made to fail as they do on a real cluster: an exit code, a run cut before
    its table, a nan busbw. The report says 4 failed and why; the decision uses only the measurements."""
    runs = [dict(r) for r in recorded["runs"]]
    broken = [i for i, r in enumerate(runs) if r["candidate"] == "NCCL_MIN_NCHANNELS=32"][:4]
    runs[broken[0]]["rc"] = 1
    runs[broken[1]]["stdout"] = runs[broken[1]]["stdout"].split("#       size")[0]
    lines = runs[broken[2]]["stdout"].splitlines()
    last = max(i for i, line in enumerate(lines) if line.strip()[:1].isdigit())
    cells = lines[last].split()
    cells[7] = "nan"
    lines[last] = "  ".join(cells)
    runs[broken[2]]["stdout"] = "\n".join(lines)
    runs[broken[3]]["rc"] = 137
    result = tuning.report({"runs": runs, "elapsed_s": 1})
    whys = [f["why"] for f in result["search"]["failed_runs"]]
    # the one verdict of a run (judge/nccl_run.py), worded as burn-in and validation word it
    assert len(whys) == 4 and whys[0] == "exited 1" and whys[3] == "exited 137"
    assert whys[1].startswith("no result rows") and whys[2] == "busbw is nan or inf at 1 size(s): a failed measurement"
    markdown = tuning.markdown(result)
    assert "## Search (%d runs: %d measured, 4 failed; 1 s)" % (len(runs), len(runs) - 4) in markdown
    assert "Failed runs (left out of every decision above):" in markdown and "repeat" in markdown
    table = tuning.collect(runs)
    assert sum(len(v) for v in table["all_reduce"]["NCCL_MIN_NCHANNELS=32"].values()) < \
        sum(len(v) for v in tuning.collect(recorded["runs"])["all_reduce"]["NCCL_MIN_NCHANNELS=32"].values())
