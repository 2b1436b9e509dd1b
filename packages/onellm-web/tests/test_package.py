from importlib import metadata

import onellm
import onellm_web


def test_version_matches_the_installed_distribution() -> None:
    assert onellm_web.__version__ == metadata.version("onellm-web")


def test_core_is_importable_beside_it() -> None:
    assert onellm.__version__ == metadata.version("onellm-core")


def test_the_public_surface() -> None:
    public = {name for name in dir(onellm_web) if not name.startswith("_")} | {"__version__"}
    assert sorted(public) == sorted(onellm_web.__all__)
