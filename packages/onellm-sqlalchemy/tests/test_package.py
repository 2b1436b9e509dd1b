from importlib import metadata

import onellm
import onellm_sqlalchemy


def test_version_matches_the_installed_distribution() -> None:
    assert onellm_sqlalchemy.__version__ == metadata.version("onellm-sqlalchemy")


def test_core_is_importable_beside_it() -> None:
    assert onellm.__version__ == metadata.version("onellm-core")
