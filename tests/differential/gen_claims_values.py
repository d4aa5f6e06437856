"""Edge values for the claims-family generator (`gen_claims.py`): names, CEL, quantities, configs.

Every pool holds the values just inside and just outside upstream's limits, wrong shapes and a
few ordinary ones; the generator combines them. Values only, no strategies with structure.
"""

from __future__ import annotations

from typing import Any

#: Upstream limits (k8s.io/api resource/v1 and the CEL selector environment).
REQUESTS_MAX = 32
SELECTORS_MAX = 32
CONSTRAINTS_MAX = 32
CONFIG_MAX = 32
FIRST_AVAILABLE_MAX = 8
TOLERATIONS_MAX = 16
DERIVED_MAX = 32
CEL_MAX_LENGTH = 10 * 1024
OPAQUE_MAX = 10 * 1024

#: JSON values of the wrong type for almost any field.
WRONG_TYPES: list[Any] = [1, -1, 1.5, "x", "", True, False, [], ["x"], {}, {"a": 1}]

DNS_LABELS = ["a", "gpu", "req-0", "r1", "0", "9x", "a" * 63]
BAD_DNS_LABELS = ["a" * 64, "", "A", "Gpu", "-a", "a-", "a.b", "a_b", "a b", "é", "a/b"]

DNS_SUBDOMAINS = ["gpu.example.com", "gpu", "a.b.c", "x-1.y-2", "a" * 253,
                  ".".join(["a" * 63] * 3) + "." + "a" * 61, "a" * 64 + ".com"]
BAD_DNS_SUBDOMAINS = ["a" * 254, "", "Gpu.example.com", "gpu..example", ".gpu", "gpu.", "gpu_x",
                      "gpu/x", "-gpu", "gpu example"]

#: CSI-driver-style names (drivers of opaque config): lower-cased, then a DNS subdomain, ≤ 63.
DRIVERS = ["dra.example.com", "gpu.example.com", "a", "Dra.Example.COM", "a" * 63, "x_y.example.com"]
BAD_DRIVERS = ["", "a" * 64, "-dra.example.com", "dra.example.com-", "dra..example.com", "dra example",
               "dra/example", ".dra"]

#: Label-name style keys (toleration keys, template labels), with and without prefix.
QUALIFIED = ["key", "example.com/key", "a" * 63, "example.com/" + "a" * 63, "a" * 253 + "/k",
             "k_1.x-Y", "Key"]
BAD_QUALIFIED = ["a" * 64, "example.com/" + "a" * 64, "a" * 254 + "/k", "/key", "example.com/",
                 "a/b/c", "-key", "key-", "ke y", "Example.com/key", "é"]
LABEL_VALUES = ["", "v", "a" * 63, "v_1.x-Y", "V"]
BAD_LABEL_VALUES = ["a" * 64, "-v", "v-", "v v", "v/x", "é"]

#: Fully qualified attribute names (matchAttribute, distinctAttribute, derivedAttributes[].name).
ATTRIBUTES = ["dra.example.com/numa", "dra.example.com/model", "derived/numa", "gpu.example.com/pcie",
              "dra.example.com/" + "a" * 32, "a" * 63 + "/x", "Dra.Example.com/numa", "dra.example.com/_x"]
BAD_ATTRIBUTES = ["numa", "dra.example.com/" + "a" * 33, "a" * 64 + "/x", "/numa", "dra.example.com/",
                  "dra.example.com/1numa", "dra.example.com/nu-ma", "a/b/c", "dra example/x", "",
                  "dra_x.com/numa"]

#: Capacity request keys: upstream validates none of them.
CAPACITY_KEYS = ["memory", "dra.example.com/memory", "", "Bad Key!", "a" * 300, "x/y/z", "é"]
QUANTITIES: list[Any] = ["1", "0", "1Gi", "1.5", "1e3", "1E3", "100m", "0.1m", "1k", "1Ki", "16Gi", "-1",
                         "+5", "9223372036854775807", "1e18", "0.000000001", "1n", "1u", "1.5Gi",
                         "12345678901234567890", "  1", 1, 0, 2.5, -3]
BAD_QUANTITIES: list[Any] = ["", "abc", "1.5.5", "1GiB", "Gi", "1 Gi", "--1", "1e", "0x10", True, [], {}]

ALLOCATION_MODES = ["ExactCount", "All", "", "all", "exactcount", "Some"]
COUNTS: list[Any] = [0, 1, 2, 5, -1, -5, 2**31, 2**63 - 1]
BAD_COUNTS: list[Any] = [2**63, 1.5, "1", True, None]

TOLERATION_OPERATORS = ["Equal", "Exists", "", "equal", "Bogus"]
TOLERATION_EFFECTS = ["NoSchedule", "NoExecute", "None", "", "PreferNoSchedule", "noschedule"]
TOLERATION_SECONDS: list[Any] = [0, 1, 300, -1, 2**63 - 1]

EXTENDED_RESOURCE_NAMES = ["example.com/gpu", "deviceclass.resource.kubernetes.io/gpu", "gpu",
                           "kubernetes.io/gpu", "requests.example.com/gpu", "example.com/" + "a" * 63,
                           "example.com/" + "a" * 64, "example.com/Gpu", "example.com/gpu_1",
                           "example.com/", "/gpu", "a/b/c", "", "nvidia.com/gpu", "k8s.io/gpu",
                           "example.kubernetes.io/gpu", "hugepages-2Mi", "example.com/-gpu"]

#: ``sub`` replaced by a string literal of the right length.
_PAD = 'device.driver == "{}"'


def padded(total: int, char: str = "x") -> str:
    """A valid selector exactly ``total`` UTF-8 bytes long (``char`` is 1 or 2 bytes)."""
    room = total - len(_PAD.format(""))
    width = len(char.encode())
    n, rest = divmod(room, width)
    return _PAD.format(char * n + "y" * rest)


def nested_all(depth: int, width: int) -> str:
    """``depth`` nested ``all()`` comprehensions over a literal list of ``width`` elements."""
    lst = "[" + ", ".join(str(i) for i in range(1, width + 1)) + "]"
    body = "x0 > 0"
    for d in range(depth):
        body = f"{lst}.all(x{d}, {body})"
    return body


def attr_comprehension(depth: int) -> str:
    """Nested comprehensions over the device's attribute maps (sizes from the declared bounds)."""
    body = "true"
    for d in range(depth):
        body = f'device.attributes["dra.example.com"].exists(k{d}, {body})'
    return body


SELECTORS_VALID = [
    'device.driver == "dra.example.com"',
    'device.attributes["dra.example.com"].model == "a100"',
    'device.attributes["dra.example.com"]["numa"] == 1',
    'device.capacity["dra.example.com"].memory.compareTo(quantity("16Gi")) >= 0',
    'device.capacity["dra.example.com"].memory.isGreaterThan(quantity("1"))',
    'has(device.attributes["dra.example.com"].model)',
    'device.attributes["dra.example.com"].version.isGreaterThan(semver("1.0.0"))',
    "true", "false", "!false", "1 < 2", '"a" + "b" == "ab"',
    "device.allowMultipleAllocations",
    '"dra.example.com" in device.attributes',
    'device.attributes.exists(d, d.startsWith("dra"))',
    'device.attributes.all(d, size(device.attributes[d]) < 10)',
    'device.driver.matches("^dra[.]")',
    'device.driver.lowerAscii() == "dra.example.com"',
    'size(device.attributes) > 0',
    'device.attributes["dra.example.com"].model in ["a", "b"]',
    'quantity("1Gi").isLessThan(quantity("2Gi"))',
    'isQuantity("1Gi")', 'semver("1.2.3").major() == 1', 'isSemver("1.2.3")',
    '[1, 2, 3].all(x, x > 0)', '[1, 2, 3].exists_one(x, x == 2)', '[1, 2].map(x, x * 2)[0] == 2',
    '[1, 2, 3].filter(x, x > 1).size() == 2',
    'device.attributes["dra.example.com"].list.exists(x, x == 1)',
    "dyn(1) == 1", 'string(1) == "1"', 'int("5") == 5', "double(1) == 1.0", "1u == uint(1)",
    'device.driver.split(".").size() == 3', 'device.driver.indexOf("x") >= 0',
    '"abc".substring(1) == "bc"', 'device.attributes["dra.example.com"].model.contains("a")',
    'device.driver.endsWith(".com") && device.driver.startsWith("dra")',
    'device.attributes["dra.example.com"].a || !device.attributes["dra.example.com"].b',
    '(device.driver == "a") ? true : false', "1 == 1.0", "[1, 2] == [1, 2]", '{"a": 1}["a"] == 1',
    'device.driver.trim() == "x"', '["a", "b"].join("-") == "a-b"', '[3, 1].isSorted()',
    '[1, 2].sum() == 3', 'device.driver.charAt(0) == "d"', 'b"abc".size() == 3',
    'type(device.driver) == string', 'null == null', '"x".replace("x", "y") == "y"',
    'quantity("1").add(1).isInteger()', 'quantity("1.5").asApproximateFloat() > 1.0',
    'device.capacity["dra.example.com"].memory.sign() == 1',
]
#: Functions of the Kubernetes CEL base environment that a selector may use.
SELECTORS_LIBRARY = [
    "'1'.find('[0-9]*') == '1'", "'abc'.findAll('[a-z]').size() == 3",
    'isURL("https://example.com")', 'url("https://example.com").getHost() == "example.com"',
    'isIP("1.2.3.4")', 'ip("1.2.3.4").family() == 4', 'cidr("10.0.0.0/8").containsIP("10.1.2.3")',
    'isCIDR("10.0.0.0/8")', 'sets.contains([1, 2], [1])', 'sets.intersects([1], [1, 2])',
    'sets.equivalent([1], [1])', 'cel.bind(d, device.attributes["dra.example.com"], d.a == 1)',
    'optional.of(1).hasValue()', 'device.attributes["dra.example.com"].?model.orValue("") == "a"',
    '"abc".reverse() == "cba"', '"%d".format([1]) == "1"', 'strings.quote("a") == "\\"a\\""',
    '"ABC".lowerAscii() == "abc"', '[1, 2].all(i, v, v > i)', '[1, 2].exists(i, v, v == 2)',
    '[1, 2].transformList(i, v, v * 2) == [2, 4]', '{"a": 1}.transformMap(k, v, v + 1)["a"] == 2',
    '[[1], [2]].flatten() == [1, 2]', '[1, 2, 3].slice(0, 1) == [1]', 'lists.range(3) == [0, 1, 2]',
    '[3, 1, 2].sort() == [1, 2, 3]', '[1, 1].distinct() == [1]', '[1, 2].reverse() == [2, 1]',
    '[1, 2].first().value() == 1', '[1, 2].last().value() == 2', '[1, 2].indexOf(2) == 1',
    '[1, 2].min() == 1', '[1, 2].max() == 2', 'format.dns1123Label().validate("a").hasValue() == false',
    '[1, 2].includes(1)', 'math.greatest(1, 2) == 2', 'base64.encode(b"a") == "YQ=="',
    'device.attributes["dra.example.com"].version.compareTo(semver("1.0.0", true)) > 0',
    'semver("v1.2", true).minor() == 2', 'quantity("1").isGreaterThan(quantity("0"))',
    'duration("1s") > duration("0s")', 'timestamp("2024-01-01T00:00:00Z") < now()',
]
SELECTORS_BAD_SYNTAX = ['device.driver ==', "(", ")", "device.", '"unterminated', "a ? b", "1 +", "[1, 2",
                        "device.driver = 'x'", "&& true", "device..driver", "{", "1 2", "'x'.", "!", "in",
                        "device.driver == 'x' ||", "[1,2].all(x)", "\x00", "@", "#comment"]
SELECTORS_BAD_TYPE = ['device.driver == 1', '1 + "a" == "1a"', 'device.driver > 1', "1 && true",
                      '"a" || true', "!1", "-\"a\" == 1", 'device.attributes[true].x', 'size(1) == 1',
                      'device.driver.matches(1)', 'quantity(1).isInteger()', 'semver(1).major() == 1',
                      'device.capacity["x"].y.compareTo(1) == 0', '[1, "a"] == [1, "a"]',
                      'device.driver.startsWith()', "1.5 % 2.0 == 1.0", "{1: 1, 'a': 2}[1] == 1",
                      'timestamp(1) < now()', 'quantity("1") + quantity("2")']
#: Literals the base environment checks at compile time (regex, duration, timestamp), and others.
SELECTORS_LITERALS = ['device.driver.matches("(")', '"x".matches("[a-")', 'duration("1x") > duration("1s")',
                      'timestamp("yesterday") < now()', 'quantity("abc").isInteger()', 'semver("1.x").major() == 1',
                      'device.driver.find("(") == ""', 'ip("300.1.1.1").family() == 4',
                      'cidr("10.0.0.0/99").ip() == ip("10.0.0.0")',
                      'url("::bad").getHost() == ""', '"%q".format([1]) == ""', 'device.driver.matches("^[a-z]+$")']
SELECTORS_UNKNOWN = ["device.foo", 'device.foo == "x"', "foo == 1", "device.driverName == 'x'",
                     "unknownFunc(1)", "device.driver.unknownMethod()", "devices.driver == 'x'",
                     'device.attributes["dra.example.com"].model.bogus()', "request.name == 'x'",
                     "self == 1", "device.capacity.memory", "device.allowMultipleAllocations.x"]
SELECTORS_NOT_BOOL = ["device.driver", "1", '"true"', "device.attributes", "[true]", "null",
                      'device.attributes["dra.example.com"].model', "device.capacity", "1.0",
                      'quantity("1")', 'semver("1.0.0")', '{"a": true}']
SELECTORS_COST = [nested_all(d, w) for d, w in ((3, 10), (4, 10), (5, 10), (6, 10), (7, 10), (8, 10),
                                                 (3, 40), (4, 40), (5, 20), (2, 100), (3, 100))]
SELECTORS_COST += [attr_comprehension(d) for d in (1, 2, 3, 4, 5)]
SELECTORS_COST += ['device.attributes["dra.example.com"].s.matches("(a|b)*c")',
                   'device.attributes.all(d, device.attributes[d].all(k, device.attributes.all(e, true)))',
                   'device.attributes["dra.example.com"].list.all(x, device.attributes["dra.example.com"]'
                   '.list.all(y, device.attributes["dra.example.com"].list.all(z, x == y)))',
                   'device.driver.split("").all(c, device.driver.split("").all(d, c == d))',
                   'device.attributes.all(d, device.attributes[d].all(k, string(device.attributes[d][k])'
                   '.matches("x+")))']
SELECTORS_LENGTH = [padded(CEL_MAX_LENGTH), padded(CEL_MAX_LENGTH + 1), padded(CEL_MAX_LENGTH - 1),
                    padded(CEL_MAX_LENGTH, "é"), padded(CEL_MAX_LENGTH + 1, "é"), padded(CEL_MAX_LENGTH // 2 + 1, "é")]
SELECTORS_DEEP = ["(" * n + "true" + ")" * n for n in (10, 100, 240, 260, 400)] + \
    [" && ".join(["true"] * n) for n in (100, 1000)] + ["!" * 300 + "true"]

#: derivedAttributes expressions: a scalar or a list of scalars, not a bool selector.
DERIVED_EXPRESSIONS = [
    'device.attributes["dra.example.com"]["numa"]', 'device.attributes["dra.example.com"].numa',
    "device.driver", "1", "true", '"x"', 'semver("1.0.0")', "[1, 2, 3]", '["a"]', "[true]",
    "device.attributes", 'device.capacity["dra.example.com"].memory', "1.5", "null", '{"a": 1}',
    "[[1]]", "[1.5]", 'device.driver == "x"', "device.driver ==", "device.foo", "1u", 'b"x"',
    'device.attributes["dra.example.com"].numa + 1', 'string(device.attributes["dra.example.com"].numa)',
    'int(device.attributes["dra.example.com"].idx)', 'device.attributes[true].someBoolean',
    nested_all(5, 10).replace("x0 > 0", "true") + ' ? 1 : 2', nested_all(7, 10).replace("x0 > 0", "true") + ' ? 1 : 2',
    '[1, 2].map(x, x)', "device.allowMultipleAllocations", 'quantity("1").asInteger()',
    padded(CEL_MAX_LENGTH).replace(" == ", " + ").replace('"y', '"'), "",
]

#: Opaque parameters: objects of every size, and values that are not objects.
_ROOM = OPAQUE_MAX - len('{"k":""}')


def _params(n: int, char: str = "x") -> dict[str, str]:
    return {"k": char * n}


OPAQUE_PARAMETERS: list[Any] = [
    {}, {"a": 1}, {"kind": "GpuConfig", "nested": {"list": [1, 2, {"x": None}]}}, {"a": None},
    _params(_ROOM), _params(_ROOM + 1), _params(_ROOM - 1), _params(_ROOM // 2, "é"),
    _params(_ROOM // 2 + 1, "é"), _params(_ROOM // 6, "<"), _params(_ROOM // 6 + 1, "<"),
    _params(_ROOM // 6, "\u2028"), {"a": 1.0}, {"a": 1e300}, {"a": 12345678901234567890},
    [1], [], "str", "", 1, 0, True, None,
]
