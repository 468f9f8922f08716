"""The harness itself: a sanitizer report in a server's log fails the test that ran it."""
import pytest

from conftest import check_sanitizer_report


@pytest.mark.parametrize("report", [
    b"==1==ERROR: LeakSanitizer: detected memory leaks\n",
    b"==1==ERROR: AddressSanitizer: heap-use-after-free on address 0x6020\n",
    b"server/src/query/diff.c:10:5: runtime error: signed integer overflow\n",
])
def test_sanitizer_report_fails_the_test(tmp_path, report):
    log = tmp_path / "server.log"
    log.write_bytes(b"info: listening\n" + report)
    with pytest.raises(AssertionError, match="sanitizer report"):
        check_sanitizer_report(str(log))


def test_report_before_this_server_started_is_not_its_own(tmp_path):
    log = tmp_path / "server.log"
    earlier = b"==1==ERROR: LeakSanitizer: detected memory leaks\n"
    log.write_bytes(earlier + b"info: listening\ninfo: stopping\n")
    check_sanitizer_report(str(log), start=len(earlier))
