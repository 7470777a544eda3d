"""Progress bars: a live bar in a notebook, one line of text in the built book
(seqtheory.book.session.StaticBar through settings.progress_bar)."""

import pytest

from seqtheory.book import session
from seqtheory.core.settings import settings


@pytest.fixture
def restore_settings(monkeypatch):
    monkeypatch.setattr(settings, "progress_bar", settings.progress_bar)
    monkeypatch.setattr(settings, "max_steps", settings.max_steps)


def test_progress_bar_is_static_text_when_building_the_book(monkeypatch, capsys, restore_settings):
    from seqtheory import progress_bar

    monkeypatch.setenv("SEQTHEORY_STATIC_PROGRESS", "1")
    session.configure()
    assert settings.progress_bar is session.StaticBar
    assert list(progress_bar(range(5), desc="demo")) == list(range(5))
    out = capsys.readouterr().out
    assert out.count("demo: 100%") == 1 and "5/5" in out
    for _ in progress_bar(range(5), desc="hidden", leave=False):
        pass
    assert "hidden" not in capsys.readouterr().out
    monkeypatch.setenv("SEQTHEORY_STATIC_PROGRESS", "0")
    session.configure()
    assert settings.progress_bar is not session.StaticBar
    assert list(progress_bar(range(3), disable=True)) == [0, 1, 2]


def test_a_bar_closed_early_says_where(monkeypatch, capsys, restore_settings):
    """A run that meets its stop rule ends its static bar with a final note, not at 1-48 %
    (a reader would take that for a crash)."""
    bar = session.StaticBar(total=100, desc="k=2")
    bar.update(10)
    bar.set_postfix(stopped="solved")
    bar.close()
    out = capsys.readouterr().out
    assert "k=2: stopped at 10 of 100 [stopped=solved]" in out and "%" not in out


def test_smoke_runs_set_the_training_step_cap(monkeypatch, restore_settings):
    monkeypatch.setenv("SEQTHEORY_SMOKE", "3")
    session.configure()
    assert settings.max_steps == 3 == session.smoke_steps()
    monkeypatch.setenv("SEQTHEORY_SMOKE", "0")
    session.configure()
    assert settings.max_steps is None
    monkeypatch.setenv("SEQTHEORY_SMOKE", "few")
    with pytest.raises(ValueError, match="SEQTHEORY_SMOKE must be"):
        session.configure()
