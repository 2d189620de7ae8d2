"""`munet root`s racing on S3 (moto) make one root model; the others report it exists, exit 0
(the race and its checks: tests/cli/test_root_race.py). Here, beside the S3 server's session
fixtures: a second copy of them (imported into another folder's module) started a second
server and left the process's S3 endpoint pointing at it for the tests that followed."""

from tests.cli.test_root_race import _check_one_root, _race


def test_racing_roots_on_s3_make_one_and_the_others_say_it_exists(s3_url):
    _check_one_root(s3_url, _race(s3_url))
