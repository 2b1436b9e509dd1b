from importlib import metadata
from pathlib import Path

import pytest

import onellm
import onellm_web

from .conftest import Site


def test_version_matches_the_installed_distribution() -> None:
    assert onellm_web.__version__ == metadata.version("onellm-web")


def test_core_is_importable_beside_it() -> None:
    assert onellm.__version__ == metadata.version("onellm-core")


def test_the_readme_example_runs(site: Site, capsys: pytest.CaptureFixture[str]) -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    code = readme.split("```python\n", 1)[1].split("```", 1)[0]
    local = code.replace("https://example.org/", f"{site.origin}/pages/news-article/").replace(
        'Capabilities.network("example.org")', 'Capabilities.network("127.0.0.1")'
    )
    assert local != code
    exec(compile(local, "README.md", "exec"), {})
    out = capsys.readouterr().out
    title = "City council approves new bike lanes on Harbor Street | The Riverton Ledger"
    assert out.startswith(f"{title}\n# {title}\nSource: {site.origin}/pages/news-article/\n\n")
    assert "[Cut: characters 0 to" in out


def test_the_public_surface() -> None:
    public = {name for name in dir(onellm_web) if not name.startswith("_")} | {"__version__"}
    assert sorted(public) == sorted(onellm_web.__all__)
