"""The daemon's types stay small enough to read in one sitting (issue 32: "no daemon type
holds more than ~15 stored properties"). scripts/check-stored-properties.py counts them;
this runs it, and first checks on known sources that it counts what Swift stores."""
import importlib.util
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check-stored-properties.py")


def _checker():
    spec = importlib.util.spec_from_file_location("check_stored_properties", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_counter_counts_stored_properties_and_nothing_else():
    source = '''
    /// A doc comment mentioning var notCounted = 1 and { braces }.
    final class Busy: Sendable {
        let a: Int
        var b = 0
        private(set) var c: [String: Int] = [:]
        weak var d: AnyObject?
        lazy var e = "let f = 2 {"
        var g: Int = 0 {
            didSet { print("changed") }
        }
        var handler: (Int) -> Void = { x in
            let notAProperty = x
            _ = notAProperty
        }
        static let shared = 1
        class var name: String { "busy" }
        var computed: Int { a + b }
        var withAccessors: Int {
            get { b }
            set { b = newValue }
        }
        func work() {
            var local = 0
            local += 1
        }
        struct Inner {
            let x: Int
            var y = \"\"\"
                var z = 3
                \"\"\"
        }
        enum Kind { case one, two
            var isOne: Bool { self == .one }
        }
    }
    extension Busy {
        var alsoComputed: Int { 1 }
    }
    protocol Shape { var sides: Int { get } }
    '''
    found = dict(_checker().types_in_source(source))
    assert found["Busy"] == ["a", "b", "c", "d", "e", "g", "handler"]
    assert found["Inner"] == ["x", "y"]
    assert found["Kind"] == []
    assert "Shape" not in found


def test_the_bound_fails_on_a_type_over_it(tmp_path):
    checker = _checker()
    fields = "\n".join(f"    var f{i} = {i}" for i in range(checker.MAX_STORED + 1))
    (tmp_path / "Big.swift").write_text(f"final class Big {{\n{fields}\n}}\n")
    (tmp_path / "Small.swift").write_text("struct Small { let a: Int }\n")
    counts = {name: len(props) for name, props in checker.types_in(str(tmp_path / "Big.swift"))}
    assert counts == {"Big": checker.MAX_STORED + 1}


def test_no_daemon_type_holds_more_than_the_bound():
    run = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
