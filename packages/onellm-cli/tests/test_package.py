from importlib import metadata

import onellm
import onellm_cli


def test_version_matches_the_installed_distribution() -> None:
    assert onellm_cli.__version__ == metadata.version("onellm-cli")


def test_core_is_importable_beside_it() -> None:
    assert onellm.__version__ == metadata.version("onellm-core")


def test_version_command_lists_installed_packages() -> None:
    from typer.testing import CliRunner

    result = CliRunner().invoke(onellm_cli.app, ["version"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert f"onellm-core {onellm.__version__}" in lines
    assert f"onellm-cli {onellm_cli.__version__}" in lines


def test_no_arguments_prints_help() -> None:
    from typer.testing import CliRunner

    result = CliRunner().invoke(onellm_cli.app, [])
    assert "Usage" in result.output
    assert "version" in result.output
