from importlib import metadata

import onellm
import onellm_js


def test_version_matches_the_installed_distribution() -> None:
    assert onellm_js.__version__ == metadata.version("onellm-js")


def test_core_is_importable_beside_it() -> None:
    assert onellm.__version__ == metadata.version("onellm-core")
