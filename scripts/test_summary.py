"""One combined result for ``make test``: sums the JUnit XML reports of the pytest runs given as
arguments and prints ``N passed, N failed, N skipped`` (errors count as failures). Exits 1 when a
run failed, errored, collected no test, or left no report; 0 otherwise."""
import sys
import xml.etree.ElementTree as ET


def main(paths: list[str]) -> int:
    passed = failed = skipped = 0
    ok = True
    for path in paths:
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as err:
            print(f"{path}: no report ({err})")
            ok = False
            continue
        for suite in root.iter("testsuite"):
            tests, fail, err, skip = (int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped"))
            if tests == 0:
                print(f"{path}: no test collected")
                ok = False
            failed += fail + err
            skipped += skip
            passed += tests - fail - err - skip
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 0 if ok and failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
