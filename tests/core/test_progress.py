"""seqtheory.core.runtime.progress_bar: a live bar in a notebook, one line of text in the
built book."""


def test_progress_bar_is_static_text_when_building_the_book(monkeypatch, capsys):
    from seqtheory import progress_bar

    monkeypatch.setenv("SEQTHEORY_STATIC_PROGRESS", "1")
    assert list(progress_bar(range(5), desc="demo")) == list(range(5))
    out = capsys.readouterr().out
    assert out.count("demo: 100%") == 1 and "5/5" in out
    for _ in progress_bar(range(5), desc="hidden", leave=False):
        pass
    assert "hidden" not in capsys.readouterr().out
    monkeypatch.setenv("SEQTHEORY_STATIC_PROGRESS", "0")
    assert list(progress_bar(range(3), disable=True)) == [0, 1, 2]


def test_a_bar_closed_early_says_where_and_why(monkeypatch, capsys):
    """A run that meets its stop rule ends its static bar with a final note, not at 1-48 %
    (a reader would take that for a crash)."""
    from seqtheory import progress_bar

    monkeypatch.setenv("SEQTHEORY_STATIC_PROGRESS", "1")
    bar = progress_bar(range(100), desc="k=2")
    for i in bar:
        if i == 9:
            bar.stopped_at, bar.stop_note = 10, "solved"
            break
    bar.close()
    out = capsys.readouterr().out
    assert "k=2: stopped at 10 of 100: solved" in out and "%" not in out
