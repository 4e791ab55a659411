"""backup_dir fences the Backup RPC's destination into one directory of the server's filesystem."""

import pytest

from polarmem_server.api.service import check_backup_destination
from polarmem_server.errors import FailedPrecondition, InvalidArgument


def test_no_destination_without_a_fence(tmp_path):
    """Before, any absolute path: an admin token could make the server write anywhere it can."""
    with pytest.raises(FailedPrecondition, match="Set backup_dir"):
        check_backup_destination(str(tmp_path / "snap"), "")


@pytest.mark.parametrize("destination", ["/etc/polarmem-snap", "{root}", "{root}/../escape", "{root}-sibling/snap"])
def test_destinations_outside_the_fence_are_refused(tmp_path, destination):
    root = tmp_path / "backups"
    root.mkdir()
    with pytest.raises(InvalidArgument, match="backup_dir"):
        check_backup_destination(destination.format(root=root), str(root))


def test_a_new_directory_inside_the_fence_passes(tmp_path):
    check_backup_destination(str(tmp_path / "backups" / "2026-11-30"), str(tmp_path / "backups"))
