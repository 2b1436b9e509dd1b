from importlib import metadata

import onellm
import onellm_sqlite


def test_version_matches_the_installed_distribution() -> None:
    assert onellm_sqlite.__version__ == metadata.version("onellm-sqlite")


def test_core_is_importable_beside_it() -> None:
    assert onellm.__version__ == metadata.version("onellm-core")
