"""The second held-out set of bench/diagnostics.py: ten tools written after the rules were frozen, measured once.

Same format as diagnostic_templates.py (which merges them into its TOOLS).
"""

from __future__ import annotations

LATE_TOOLS: dict[str, dict] = {
    "cppcheck": {
        "ext": "cpp",
        "printed": "{path}:{line}:{col}: error: {msg} [{id}]",
        "templates": [
            ("arrayIndexOutOfBounds", "Array '{v}[{n}]' accessed at index {n}, which is out of bounds."),
            ("nullPointer", "Null pointer dereference: {v}"),
            ("uninitvar", "Uninitialized variable: {v}"),
            ("memleak", "Memory leak: {v}"),
            ("unusedFunction", "The function '{f}' is never used."),
            ("unreadVariable", "Variable '{v}' is assigned a value that is never used."),
            ("shadowVariable", "Local variable '{v}' shadows outer variable"),
            ("constParameter", "Parameter '{v}' can be declared as pointer to const"),
            ("noExplicitConstructor", "Class '{c}' has a constructor with 1 argument that is not explicit."),
            ("missingInclude", "Include file: \"{h}\" not found."),
        ],
    },
    "msvc": {
        "ext": "cpp",
        "printed": "{path}({line}): error {id}: {msg}",
        "templates": [
            ("C2065", "'{v}': undeclared identifier"),
            ("C2039", "'{a}': is not a member of '{c}'"),
            ("C3861", "'{f}': identifier not found"),
            ("C2440", "'initializing': cannot convert from '{t}' to '{t2}'"),
            ("C2664", "'{f}': cannot convert argument {n} from '{t}' to '{t2}'"),
            ("C1083", "Cannot open include file: '{h}': No such file or directory"),
            ("C2146", "syntax error: missing ';' before identifier '{v}'"),
            ("C4101", "'{v}': unreferenced local variable"),
        ],
    },
    "swiftc": {
        "ext": "swift",
        "printed": "{path}:{line}:{col}: error: {msg}",
        "templates": [
            ("", "cannot find '{v}' in scope"),
            ("", "value of type '{t}' has no member '{a}'"),
            ("", "cannot convert value of type '{t}' to specified type '{t2}'"),
            ("", "missing argument for parameter '{v}' in call"),
            ("", "use of unresolved identifier '{v}'"),
            ("", "no such module '{m}'"),
            ("", "cannot assign to value: '{v}' is a 'let' constant"),
            ("", "type '{c}' does not conform to protocol '{c2}'"),
        ],
    },
    "ruby": {
        "ext": "rb",
        "printed": "{path}:{line}:in '<main>': {msg}",
        "templates": [
            ("", "undefined local variable or method '{v}' for an instance of {c} (NameError)"),
            ("", "undefined method '{f}' for nil (NoMethodError)"),
            ("", "uninitialized constant {c} (NameError)"),
            ("", "wrong number of arguments (given {n}, expected {n}) (ArgumentError)"),
            ("", "cannot load such file -- {m} (LoadError)"),
            ("", "key not found: :{k} (KeyError)"),
        ],
    },
    "php": {
        "ext": "php",
        "printed": "PHP Fatal error:  Uncaught Error: {msg} in {path}:{line}",
        "templates": [
            ("", "Call to undefined function {f}()"),
            ("", "Call to undefined method {c}::{f}()"),
            ("", "Class \"{c}\" not found"),
            ("", "Undefined constant \"{k}\""),
            ("", "Call to a member function {f}() on null"),
            ("", "Cannot access private property {c}::${a}"),
        ],
    },
    "rubocop": {
        "ext": "rb",
        "printed": "{path}:{line}:{col}: W: {id}: {msg}",
        "templates": [
            ("Lint/UselessAssignment", "Useless assignment to variable - `{v}`."),
            ("Lint/UnusedMethodArgument", "Unused method argument - `{v}`. If it's necessary, use `_` or `_{v}` as an argument name to indicate that it won't be used."),
            ("Naming/MethodName", "Use snake_case for method names."),
            ("Lint/ShadowingOuterLocalVariable", "Shadowing outer local variable - `{v}`."),
            ("Naming/VariableName", "Use snake_case for variable names."),
            ("Lint/UnderscorePrefixedVariableName", "Do not use prefix `_` for a variable that is used."),
        ],
    },
    "hadolint": {
        "ext": "dockerfile",
        "printed": "{path}:{line} {id} warning: {msg}",
        "templates": [
            ("DL3008", "Pin versions in apt get install. Instead of `apt-get install <package>` use `apt-get install <package>=<version>`"),
            ("DL3006", "Always tag the version of an image explicitly"),
            ("SC2086", "Double quote to prevent globbing and word splitting."),
            ("DL3013", "Pin versions in pip. Instead of `pip install <package>` use `pip install <package>==<version>` or `pip install --requirement <requirements file>`"),
            ("DL3025", "Use arguments JSON notation for CMD and ENTRYPOINT arguments"),
            ("DL3018", "Pin versions in apk add. Instead of `apk add <package>` use `apk add <package>=<version>`"),
        ],
    },
    "maven": {
        "ext": "java",
        "printed": "[ERROR] {path}:[{line},{col}] {msg}",
        "templates": [
            ("", "cannot find symbol\n  symbol:   class {c}\n  location: package {m}"),
            ("", "package {m} does not exist"),
            ("", "incompatible types: {t} cannot be converted to {t2}"),
            ("", "method {f} in class {c} cannot be applied to given types;"),
            ("", "variable {v} is already defined in method {f}()"),
            ("", "cannot find symbol\n  symbol:   method {f}()\n  location: variable {v} of type {c}"),
        ],
    },
    "clippy": {
        "ext": "rs",
        "printed": "warning: {msg}\n  --> {path}:{line}:{col}\n   |\n{line} |     let total = compute(items);\n   |\n   = help: for further information visit https://rust-lang.github.io/rust-clippy/master/index.html#{id}",
        "templates": [
            ("needless_return", "unneeded `return` statement"),
            ("redundant_clone", "redundant clone"),
            ("unused_variables", "unused variable: `{v}`"),
            ("dead_code", "function `{f}` is never used"),
            ("dead_code", "field `{a}` is never read"),
            ("unused_imports", "unused import: `{m}`"),
            ("non_snake_case", "variable `{v}` should have a snake case name"),
            ("new_without_default", "you should consider adding a `Default` implementation for `{c}`"),
        ],
    },
    "phpstan": {
        "ext": "php",
        "printed": " ------ ---------------------------------------------\n  Line   {path}\n ------ ---------------------------------------------\n  {line}     {msg}",
        "templates": [
            ("", "Call to an undefined method {c}::{f}()."),
            ("", "Access to an undefined property {c}::${a}."),
            ("", "Function {f} not found."),
            ("", "Variable ${v} might not be defined."),
            ("", "Parameter #{n} ${v} of method {c}::{f}() expects {t}, {t2} given."),
            ("", "Class {c} not found."),
        ],
    },
}
