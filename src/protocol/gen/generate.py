#!/usr/bin/python3
"""Generates ringlog's Kafka wire codec from src/protocol/schemas/*.json (stdlib only).

Usage: generate.py SCHEMA_DIR OUT_DIR SHARDS
Writes into OUT_DIR:
  messages.h                       one C++ struct per message (all its versions), api helpers
  messages_<i>.cc (i < SHARDS)     encode/decode bodies, split so the compile runs in parallel
  samples.h + samples.cc           test support: fill every field present in a version
                                   with a non-default value; for_each_message visits every type

Schema format (ours, modelled on Kafka's message JSON; the wire rules are Kafka's, KIP-482):
  {"apiKey": N, "type": "request"|"response"|"header"|"metadata"|"data", "name": "VoteRequest",
   "validVersions": "0-1", "flexibleVersions": "0+"|"none",
   "fields": [FIELD...], "commonStructs": [{"name": ..., "versions": ..., "fields": [...]}]}
  FIELD: {"name", "type": bool|int8|int16|uint16|int32|uint32|int64|float64|string|uuid|bytes|
          records|[]T|StructName, "versions", "nullableVersions"?, "taggedVersions"?, "tag"?,
          "default"?, "ignorable"?, "flexibleVersions"? (string/bytes only), "fields"? (inline struct)}
  Version specs: "N", "N+", "N-M", "none".
"""

import json
import os
import re
import sys

PRIMITIVE_CPP = {
    "bool": "bool", "int8": "int8_t", "int16": "int16_t", "uint16": "uint16_t", "int32": "int32_t",
    "uint32": "uint32_t", "int64": "int64_t", "float64": "double", "uuid": "uuid",
}
# Smallest wire size of one array element of each primitive type, bytes (strings and structs:
# at least one byte); bounds an array count by the bytes left (see reader::read_array_length).
PRIMITIVE_SIZE = {"bool": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8,
                  "float64": 8, "uuid": 16}
READ_FN = {"bool": "read_bool", "int8": "read_int8", "int16": "read_int16", "uint16": "read_uint16",
           "int32": "read_int32", "uint32": "read_uint32", "int64": "read_int64", "float64": "read_float64",
           "uuid": "read_uuid"}
WRITE_FN = {k: v.replace("read_", "write_") for k, v in READ_FN.items()}
INT_RANGE = {"int8": (-128, 127), "int16": (-32768, 32767), "uint16": (0, 65535),
             "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1), "int64": (-2**63, 2**63 - 1)}


def fail(msg):
    sys.stderr.write("generate.py: " + msg + "\n")
    sys.exit(1)


def snake(name):
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return s.lower()


class Versions:
    """A version range [lo, hi] (hi None = open), or empty."""

    def __init__(self, spec):
        spec = str(spec).strip()
        self.empty = spec == "none"
        self.lo, self.hi = 0, None
        if self.empty:
            return
        if spec.endswith("+"):
            self.lo = int(spec[:-1])
        elif "-" in spec:
            a, b = spec.split("-")
            self.lo, self.hi = int(a), int(b)
        else:
            self.lo = self.hi = int(spec)

    def contains(self, v):
        return not self.empty and v >= self.lo and (self.hi is None or v <= self.hi)

    def cond(self, lo, hi):
        """C++ condition on `version`, simplified for a message whose versions are lo..hi."""
        if self.empty or (self.hi is not None and self.hi < lo) or self.lo > hi:
            return "false"
        parts = []
        if self.lo > lo:
            parts.append("version >= %d" % self.lo)
        if self.hi is not None and self.hi < hi:
            parts.append("version <= %d" % self.hi)
        if not parts:
            return "true"
        return "(" + " && ".join(parts) + ")"


class Field:
    def __init__(self, d, msg):
        self.name = d["name"]
        self.cname = snake(self.name)
        self.type = d["type"]
        self.versions = Versions(d.get("versions", "none"))
        self.nullable = Versions(d.get("nullableVersions", "none"))
        self.tagged = Versions(d.get("taggedVersions", "none"))
        self.tag = int(d["tag"]) if "tag" in d else None
        self.default = d.get("default")
        self.ignorable = bool(d.get("ignorable", False))
        self.flexible_override = Versions(d["flexibleVersions"]) if "flexibleVersions" in d else None
        self.inline_fields = d.get("fields")
        self.is_array = self.type.startswith("[]")
        self.elem = self.type[2:] if self.is_array else self.type
        self.elem_is_struct = self.elem not in PRIMITIVE_CPP and self.elem not in ("string", "bytes", "records")
        if self.tagged.empty != (self.tag is None):
            fail("%s.%s: tag and taggedVersions go together" % (msg, self.name))
        self.any_nullable = not self.nullable.empty


class Struct:
    def __init__(self, name, fields, versions):
        self.name = name
        self.fields = fields
        self.versions = versions
        self.cname = snake(name)


class Message:
    def __init__(self, d, path):
        self.name = d["name"]
        self.kind = d["type"]
        self.api_key = d.get("apiKey")
        self.valid = Versions(d["validVersions"])
        self.flexible = Versions(d.get("flexibleVersions", "none"))
        self.lo, self.hi = self.valid.lo, self.valid.hi
        if self.kind in ("request", "response", "header"):
            self.cname = snake(self.name) + "_data"
        else:
            self.cname = snake(self.name)
        self.structs = {}  # Kafka struct name -> Struct
        self.order = []    # structs in declaration order (children before parents)
        all_field_names = set()
        todo = list(d.get("fields", [])) + [f for s in d.get("commonStructs", []) for f in s.get("fields", [])]
        while todo:
            f = todo.pop()
            all_field_names.add(snake(f["name"]))
            todo.extend(f.get("fields", []))
        self.field_names = all_field_names
        for cs in d.get("commonStructs", []):
            self.add_struct(cs["name"], cs["fields"], Versions(cs.get("versions", "0+")), path)
        self.top = Struct(self.name, [Field(f, self.name) for f in d.get("fields", [])], self.valid)
        self.top.cname = self.cname
        self.collect(self.top, d.get("fields", []), path)
        self.order.append(self.top)

    def add_struct(self, name, fields_json, versions, path):
        if name in self.structs:
            if json.dumps(self.structs[name].raw, sort_keys=True) != json.dumps(fields_json, sort_keys=True):
                fail("%s: struct %s defined twice differently" % (path, name))
            return
        s = Struct(name, [Field(f, self.name) for f in fields_json], versions)
        s.raw = fields_json
        if s.cname in self.field_names or s.cname == self.cname:
            s.cname += "_data"
        self.structs[name] = s
        self.collect(s, fields_json, path)
        self.order.append(s)

    def collect(self, struct, fields_json, path):
        # Python recursion over the schema tree (depth <= 5 in practice); the C++ it writes has none.
        for f, fj in zip(struct.fields, fields_json):
            if f.elem_is_struct and "fields" in fj:
                self.add_struct(f.elem, fj["fields"], f.versions, path)

    def struct_of(self, field):
        if field.elem not in self.structs:
            fail("%s: field %s has unknown type %s" % (self.name, field.name, field.type))
        return self.structs[field.elem]


# ---- C++ types and defaults ----

def scalar_cpp(msg, field, elem):
    if elem in PRIMITIVE_CPP:
        return PRIMITIVE_CPP[elem]
    if elem == "string":
        return "std::string"
    if elem in ("bytes", "records"):
        return "bytes"
    return msg.struct_of(field).cname


def cpp_type(msg, f):
    inner = scalar_cpp(msg, f, f.elem)
    if f.is_array:
        inner = "std::vector<%s>" % inner
    if f.any_nullable:
        return "std::optional<%s>" % inner
    return inner


def int_literal(t, text):
    v = int(str(text), 0)
    lo, hi = INT_RANGE[t]
    if v < lo or v > hi:
        fail("default %s out of range for %s" % (text, t))
    if v == lo and lo < 0:
        return "std::numeric_limits<%s>::min()" % PRIMITIVE_CPP[t]
    return "%s{%s}" % (PRIMITIVE_CPP[t], str(text))


def is_default_expr(msg, f, member):
    """C++ condition: `member` holds the field's default. A null default is tested with
    has_value(): comparing with a temporary empty optional made GCC 12 with ASan report a
    maybe-uninitialized read of the temporary (-Werror)."""
    init = default_init(msg, f)
    if init == cpp_type(msg, f) + "{}" and cpp_type(msg, f).startswith("std::optional<"):
        return "!%s.has_value()" % member
    return "(%s == %s)" % (member, init)


def default_init(msg, f):
    """Expression of the field's C++ type holding its default (Kafka's rules: numbers 0, bool
    false, string "", bytes empty, records null, arrays empty, uuid zero, unless "default")."""
    t = cpp_type(msg, f)
    d = f.default
    if f.is_array:
        if f.any_nullable and d == "null":
            return t + "{}"
        return "%s{%s{}}" % (t, "std::vector<%s>" % scalar_cpp(msg, f, f.elem)) if f.any_nullable else t + "{}"
    e = f.elem
    if e in INT_RANGE:
        return int_literal(e, d if d is not None else 0)
    if e == "bool":
        return "true" if str(d).lower() == "true" else "false"
    if e == "float64":
        return "double{%s}" % (d if d is not None else "0.0")
    if e == "uuid":
        if d not in (None, "AAAAAAAAAAAAAAAAAAAAAA"):
            fail("%s: only the zero uuid default is supported" % f.name)
        return "uuid{}"
    if e == "string":
        if f.any_nullable:
            if d == "null":
                return t + "{}"
            return "%s{std::string{%s}}" % (t, json.dumps(d or ""))
        return "std::string{%s}" % json.dumps(d or "")
    if e in ("bytes", "records"):
        if f.any_nullable:
            if d == "null" or e == "records":
                return t + "{}"
            return "%s{bytes{}}" % t
        return "bytes{}"
    # struct
    if f.any_nullable:
        return t + "{}" if d == "null" else "%s{%s{}}" % (t, scalar_cpp(msg, f, e))
    return t + "{}"


# ---- code emission ----

class Out:
    def __init__(self):
        self.lines = []

    def __call__(self, indent, text):
        self.lines.append("  " * indent + text if text else "")

    def text(self):
        return "\n".join(self.lines) + "\n"


def compact_expr(msg, f):
    if f.flexible_override is not None:
        return f.flexible_override.cond(msg.lo, msg.hi)
    return "flexible"


def prefix_lit(f):
    return '"%s: "' % f.cname


def emit_write_value(o, ind, msg, f, src, w):
    """Writes field f's value `src` (of cpp_type) to writer w; errors return prefixed."""
    compact = compact_expr(msg, f)
    nullable_now = f.nullable.cond(msg.lo, msg.hi)
    pfx = prefix_lit(f)
    if f.is_array:
        o(ind, "{")
        ind += 1
        if f.any_nullable:
            o(ind, "if (!%s.has_value()) {" % src)
            o(ind + 1, "if (!(%s)) {" % nullable_now)
            o(ind + 2, "return error{errc::null_value, %s \"null in a version where it is not nullable\"};" % pfx)
            o(ind + 1, "}")
            o(ind + 1, "%s.write_null_array(%s);" % (w, compact))
            o(ind, "} else {")
            ind += 1
            arr = "(*%s)" % src
        else:
            arr = src
        o(ind, "RINGLOG_PROTOCOL_TRY_AT(%s.write_array_length(%s.size(), %s), %s);" % (w, arr, compact, pfx))
        o(ind, "for (size_t i_ = 0; i_ < %s.size(); ++i_) {" % arr)
        el = "%s[i_]" % arr
        idx_pfx = '"%s[" + std::to_string(i_) + "]' % f.cname
        if f.elem_is_struct:
            o(ind + 1, "RINGLOG_PROTOCOL_TRY_AT(%s.encode(%s, version), %s.\");" % (el, w, idx_pfx))
        elif f.elem == "string":
            o(ind + 1, "RINGLOG_PROTOCOL_TRY_AT(%s.write_string(%s, %s), %s: \");" % (w, el, compact, idx_pfx))
        elif f.elem in ("bytes", "records"):
            o(ind + 1, "RINGLOG_PROTOCOL_TRY_AT(%s.write_bytes(%s, %s), %s: \");" % (w, el, compact, idx_pfx))
        else:
            o(ind + 1, "%s.%s(%s);" % (w, WRITE_FN[f.elem], el))
        o(ind, "}")
        if f.any_nullable:
            ind -= 1
            o(ind, "}")
        ind -= 1
        o(ind, "}")
        return
    e = f.elem
    if e in PRIMITIVE_CPP:
        o(ind, "%s.%s(%s);" % (w, WRITE_FN[e], src))
        return
    if e in ("string", "bytes", "records"):
        kind = "string" if e == "string" else "bytes"
        if f.any_nullable:
            o(ind, "if (!%s.has_value() && !(%s)) {" % (src, nullable_now))
            o(ind + 1, "return error{errc::null_value, %s \"null in a version where it is not nullable\"};" % pfx)
            o(ind, "}")
            o(ind, "RINGLOG_PROTOCOL_TRY_AT(%s.write_nullable_%s(%s, %s), %s);" % (w, kind, src, compact, pfx))
        else:
            o(ind, "RINGLOG_PROTOCOL_TRY_AT(%s.write_%s(%s, %s), %s);" % (w, kind, src, compact, pfx))
        return
    # struct field; a nullable one is prefixed by an int8: -1 null, 1 present (Kafka's generator)
    if f.any_nullable:
        o(ind, "if (!%s.has_value()) {" % src)
        o(ind + 1, "if (!(%s)) {" % nullable_now)
        o(ind + 2, "return error{errc::null_value, %s \"null in a version where it is not nullable\"};" % pfx)
        o(ind + 1, "}")
        o(ind + 1, "%s.write_int8(-1);" % w)
        o(ind, "} else {")
        o(ind + 1, "if (%s) {" % nullable_now)
        o(ind + 2, "%s.write_int8(1);" % w)
        o(ind + 1, "}")
        o(ind + 1, "RINGLOG_PROTOCOL_TRY_AT(%s->encode(%s, version), \"%s.\");" % (src, w, f.cname))
        o(ind, "}")
    else:
        o(ind, "RINGLOG_PROTOCOL_TRY_AT(%s.encode(%s, version), \"%s.\");" % (src, w, f.cname))


def emit_read_value(o, ind, msg, f, dst, rd):
    """Reads field f into `dst` from reader rd; errors return prefixed."""
    compact = compact_expr(msg, f)
    nullable_now = f.nullable.cond(msg.lo, msg.hi)
    pfx = prefix_lit(f)
    if f.is_array:
        st = scalar_cpp(msg, f, f.elem)
        min_size = PRIMITIVE_SIZE.get(f.elem, 1)
        o(ind, "{")
        o(ind + 1, "auto n_ = %s.read_array_length(%s, %s, %d);" % (rd, compact, nullable_now if f.any_nullable else "false", min_size))
        o(ind + 1, "if (!n_.ok()) {")
        o(ind + 2, "return with_prefix(n_.error(), %s);" % pfx)
        o(ind + 1, "}")
        o(ind + 1, "if (*n_ < 0) {")
        o(ind + 2, "%s = std::nullopt;" % dst if f.any_nullable else "RINGLOG_ASSERT(false, \"read_array_length returned null for a non-nullable array\");")
        o(ind + 1, "} else {")
        o(ind + 2, "std::vector<%s> v_;" % st)
        o(ind + 2, "v_.reserve(static_cast<size_t>(*n_));")
        o(ind + 2, "for (int32_t i_ = 0; i_ < *n_; ++i_) {")
        idx_pfx = '"%s[" + std::to_string(i_) + "]' % f.cname
        if f.elem_is_struct:
            o(ind + 3, "auto e_ = %s::decode(%s, version);" % (st, rd))
            tail = '."'
        elif f.elem == "string":
            o(ind + 3, "auto e_ = %s.read_string(%s);" % (rd, compact))
            tail = ': "'
        elif f.elem in ("bytes", "records"):
            o(ind + 3, "auto e_ = %s.read_bytes(%s);" % (rd, compact))
            tail = ': "'
        else:
            o(ind + 3, "auto e_ = %s.%s();" % (rd, READ_FN[f.elem]))
            tail = ': "'
        o(ind + 3, "if (!e_.ok()) {")
        o(ind + 4, "return with_prefix(e_.error(), %s%s);" % (idx_pfx, tail))
        o(ind + 3, "}")
        o(ind + 3, "v_.push_back(std::move(*e_));")
        o(ind + 2, "}")
        o(ind + 2, "%s = std::move(v_);" % dst)
        o(ind + 1, "}")
        o(ind, "}")
        return
    e = f.elem
    if e in PRIMITIVE_CPP:
        expr = "%s.%s()" % (rd, READ_FN[e])
    elif e in ("string", "bytes", "records"):
        kind = "string" if e == "string" else "bytes"
        if f.any_nullable:
            o(ind, "if (%s) {" % nullable_now)
            emit_read_expr(o, ind + 1, "%s.read_nullable_%s(%s)" % (rd, kind, compact), dst, pfx)
            o(ind, "} else {")
            emit_read_expr(o, ind + 1, "%s.read_%s(%s)" % (rd, kind, compact), dst, pfx)
            o(ind, "}")
            return
        expr = "%s.read_%s(%s)" % (rd, kind, compact)
    else:
        st = scalar_cpp(msg, f, e)
        if f.any_nullable:
            o(ind, "{")
            o(ind + 1, "bool present_ = true;")
            o(ind + 1, "if (%s) {" % nullable_now)
            o(ind + 2, "auto p_ = %s.read_int8();" % rd)
            o(ind + 2, "if (!p_.ok()) {")
            o(ind + 3, "return with_prefix(p_.error(), %s);" % pfx)
            o(ind + 2, "}")
            o(ind + 2, "present_ = *p_ >= 0;")
            o(ind + 1, "}")
            o(ind + 1, "if (!present_) {")
            o(ind + 2, "%s = std::nullopt;" % dst)
            o(ind + 1, "} else {")
            emit_read_expr(o, ind + 2, "%s::decode(%s, version)" % (st, rd), dst, '"%s."' % f.cname)
            o(ind + 1, "}")
            o(ind, "}")
            return
        emit_read_expr(o, ind, "%s::decode(%s, version)" % (st, rd), dst, '"%s."' % f.cname)
        return
    emit_read_expr(o, ind, expr, dst, pfx)


def emit_read_expr(o, ind, expr, dst, pfx):
    o(ind, "{")
    o(ind + 1, "auto r_ = %s;" % expr)
    o(ind + 1, "if (!r_.ok()) {")
    o(ind + 2, "return with_prefix(r_.error(), %s);" % pfx)
    o(ind + 1, "}")
    o(ind + 1, "%s = std::move(*r_);" % dst)
    o(ind, "}")


def set_cond(versions, lo, hi):
    """C++ condition on `version` true exactly for the versions in the set (all within lo..hi)."""
    vs = sorted(versions)
    if not vs:
        return "false"
    if vs == list(range(lo, hi + 1)):
        return "true"
    ranges = []
    for v in vs:
        if ranges and ranges[-1][1] == v - 1:
            ranges[-1][1] = v
        else:
            ranges.append([v, v])
    parts = []
    for a, b in ranges:
        if b == hi:
            parts.append("version >= %d" % a)
        elif a == lo:
            parts.append("version <= %d" % b)
        elif a == b:
            parts.append("version == %d" % a)
        else:
            parts.append("(version >= %d && version <= %d)" % (a, b))
    return "(" + " || ".join(parts) + ")"


def field_conds(msg, f):
    """(present, regular, tagged) conditions: in the version at all, as a regular field, as a
    tagged field (KIP-482: a field may be regular in some versions and tagged in others)."""
    span = range(msg.lo, msg.hi + 1)
    present = {v for v in span if f.versions.contains(v)}
    tagged = {v for v in present if f.tagged.contains(v)}
    return (set_cond(present, msg.lo, msg.hi), set_cond(present - tagged, msg.lo, msg.hi),
            set_cond(tagged, msg.lo, msg.hi))


def open_if(o, ind, cond):
    """Opens `if (cond) {` unless cond is always true; returns the indent of the body."""
    if cond == "true":
        return ind
    o(ind, "if (%s) {" % cond)
    return ind + 1


def close_if(o, ind, cond):
    if cond != "true":
        o(ind, "}")


def qualified(msg, s):
    return s.cname if s is msg.top else "%s::%s" % (msg.cname, s.cname)


def emit_struct_impl(o, msg, s):
    q = qualified(msg, s)
    top = s is msg.top
    enc = "encode_body" if top else "encode"
    dec = "decode_body" if top else "decode"
    flex = msg.flexible.cond(msg.lo, msg.hi)
    # encode
    o(0, "result<void> %s::%s(writer& w, int16_t version) const {" % (q, enc))
    o(1, "static_cast<void>(version);")
    o(1, "[[maybe_unused]] const bool flexible = %s;" % flex)
    for f in s.fields:
        present, regular, tagged = field_conds(msg, f)
        member = "this->" + f.cname
        if regular != "false":
            emit_write_value(o, open_if(o, 1, regular), msg, f, member, "w")
            close_if(o, 1, regular)
        if present != "true":
            if not f.ignorable:
                o(1, "if (!%s && !%s) {" % (present, is_default_expr(msg, f, member)))
                o(2, "return error{errc::unsupported_version, \"%s: set to a non-default value but not in version \" + std::to_string(version)};" % f.cname)
                o(1, "}")
    if flex != "false":
        o(1, "if (flexible) {")
        o(2, "std::vector<std::pair<uint32_t, writer>> tagged_;")
        for f in sorted([f for f in s.fields if f.tag is not None], key=lambda f: f.tag):
            _, _, tagged = field_conds(msg, f)
            if tagged == "false":
                continue
            o(2, "if (%s && !%s) {" % (tagged, is_default_expr(msg, f, "this->" + f.cname)))
            o(3, "writer t_(w.recording_marks());")
            emit_write_value(o, 3, msg, f, "this->" + f.cname, "t_")
            o(3, "tagged_.emplace_back(%du, std::move(t_));" % f.tag)
            o(2, "}")
        o(2, "RINGLOG_PROTOCOL_TRY_AT(w.write_tagged_fields(tagged_, this->unknown_tagged_fields), \"tagged fields: \");")
        o(1, "}")
    o(1, "return base::ok_v;")
    o(0, "}")
    o(0, "")
    # decode
    o(0, "result<%s> %s::%s(reader& rd, int16_t version) {" % (q, q, dec))
    o(1, "static_cast<void>(version);")
    o(1, "[[maybe_unused]] const bool flexible = %s;" % flex)
    o(1, "%s out;" % q)
    for f in s.fields:
        _, regular, _ = field_conds(msg, f)
        if regular == "false":
            continue
        emit_read_value(o, open_if(o, 1, regular), msg, f, "out." + f.cname, "rd")
        close_if(o, 1, regular)
    if flex != "false":
        o(1, "if (flexible) {")
        o(2, "auto count_ = rd.read_tagged_field_count();")
        o(2, "if (!count_.ok()) {")
        o(3, "return with_prefix(count_.error(), \"tagged fields: \");")
        o(2, "}")
        o(2, "for (uint32_t i_ = 0; i_ < *count_; ++i_) {")
        o(3, "auto tag_ = rd.read_unsigned_varint();")
        o(3, "if (!tag_.ok()) {")
        o(4, "return with_prefix(tag_.error(), \"tagged fields: \");")
        o(3, "}")
        o(3, "auto size_ = rd.read_unsigned_varint();")
        o(3, "if (!size_.ok()) {")
        o(4, "return with_prefix(size_.error(), \"tagged fields: \");")
        o(3, "}")
        o(3, "auto sub_ = rd.sub_reader(*size_);")
        o(3, "if (!sub_.ok()) {")
        o(4, "return with_prefix(sub_.error(), \"tagged field \" + std::to_string(*tag_) + \": \");")
        o(3, "}")
        o(3, "reader& tr_ = *sub_;")
        first = True
        for f in sorted([f for f in s.fields if f.tag is not None], key=lambda f: f.tag):
            _, _, tagged = field_conds(msg, f)
            if tagged == "false":
                continue
            o(3, "%sif (*tag_ == %du && %s) {" % ("" if first else "} else ", f.tag, tagged))
            first = False
            emit_read_value(o, 4, msg, f, "out." + f.cname, "tr_")
            o(4, "if (tr_.remaining() != 0) {")
            o(5, "return error{errc::invalid_tagged_field, \"%s: \" + std::to_string(tr_.remaining()) + \" bytes left in its tagged field\"};" % f.cname)
            o(4, "}")
        o(3, "%s{" % ("" if first else "} else "))
        o(4, "for (const auto& u_ : out.unknown_tagged_fields) {")
        o(5, "if (u_.tag == *tag_) {")
        o(6, "return error{errc::invalid_tagged_field, \"tagged field \" + std::to_string(*tag_) + \" repeated\"};")
        o(5, "}")
        o(4, "}")
        o(4, "auto raw_ = tr_.read_raw(tr_.remaining());")
        o(4, "RINGLOG_ASSERT(raw_.ok(), \"reading what is left cannot fail\");")
        o(4, "out.unknown_tagged_fields.push_back(tagged_field{*tag_, std::move(*raw_)});")
        o(3, "}")
        o(2, "}")
        o(1, "}")
    o(1, "return out;")
    o(0, "}")
    o(0, "")


def emit_top_impl(o, msg):
    q = msg.cname
    o(0, "result<void> %s::encode(writer& w, int16_t version) const {" % q)
    o(1, "if (version < lowest_supported_version || version > highest_supported_version) {")
    o(2, "return error{errc::unsupported_version, \"%s: version \" + std::to_string(version) + \" is outside %d..%d\"};" % (msg.name, msg.lo, msg.hi))
    o(1, "}")
    o(1, "auto r_ = encode_body(w, version);")
    o(1, "if (!r_.ok()) {")
    o(2, "return with_prefix(r_.error(), \"%s v\" + std::to_string(version) + \": \");" % msg.name)
    o(1, "}")
    o(1, "return base::ok_v;")
    o(0, "}")
    o(0, "")
    o(0, "result<%s> %s::decode(reader& rd, int16_t version) {" % (q, q))
    o(1, "if (version < lowest_supported_version || version > highest_supported_version) {")
    o(2, "return error{errc::unsupported_version, \"%s: version \" + std::to_string(version) + \" is outside %d..%d\"};" % (msg.name, msg.lo, msg.hi))
    o(1, "}")
    o(1, "auto r_ = decode_body(rd, version);")
    o(1, "if (!r_.ok()) {")
    o(2, "return with_prefix(r_.error(), \"%s v\" + std::to_string(version) + \": \");" % msg.name)
    o(1, "}")
    o(1, "return r_;")
    o(0, "}")
    o(0, "")
    o(0, "bool %s::is_flexible(int16_t version) {" % q)
    o(1, "static_cast<void>(version);")
    o(1, "return %s;" % msg.flexible.cond(msg.lo, msg.hi))
    o(0, "}")
    o(0, "")


def emit_struct_decl(o, ind, msg, s):
    top = s is msg.top
    if top:
        o(ind, "/// %s (%s%s), versions %d..%d, flexible %s." % (
            msg.name, msg.kind, "" if msg.api_key is None else ", api key %d" % msg.api_key, msg.lo, msg.hi,
            "none" if msg.flexible.empty else "%d+" % msg.flexible.lo))
    o(ind, "struct %s {" % s.cname)
    if top:
        if msg.api_key is not None:
            o(ind + 1, "static constexpr int16_t api_key = %d;" % msg.api_key)
        o(ind + 1, "static constexpr int16_t lowest_supported_version = %d;" % msg.lo)
        o(ind + 1, "static constexpr int16_t highest_supported_version = %d;" % msg.hi)
        o(ind + 1, "static constexpr std::string_view schema_name = \"%s\";" % msg.name)
        o(ind + 1, "/// Whether `version` uses compact strings/arrays and tagged fields (KIP-482).")
        o(ind + 1, "static bool is_flexible(int16_t version);")
        o(0, "")
        for ns in msg.order[:-1]:
            emit_struct_decl(o, ind + 1, msg, ns)
    for f in s.fields:
        notes = ["versions %s" % fmt_versions(f.versions)]
        if not f.nullable.empty:
            notes.append("nullable %s" % fmt_versions(f.nullable))
        if f.tag is not None:
            notes.append("tag %d in %s" % (f.tag, fmt_versions(f.tagged)))
        o(ind + 1, "%s %s = %s;  // %s" % (cpp_type(msg, f), f.cname, default_init(msg, f), ", ".join(notes)))
    o(ind + 1, "/// Tagged fields this codec does not know, kept to be written back (flexible versions only).")
    o(ind + 1, "std::vector<tagged_field> unknown_tagged_fields;")
    o(0, "")
    if top:
        o(ind + 1, "/// Appends this message at `version`. Errors: unsupported_version (version out of range, or")
        o(ind + 1, "/// a non-ignorable field set but absent in it), null_value, invalid_length, invalid_tagged_field.")
        o(ind + 1, "result<void> encode(writer& w, int16_t version) const;")
        o(ind + 1, "/// Reads this message at `version`; leaves rd after it. Errors name the field path.")
        o(ind + 1, "static result<%s> decode(reader& rd, int16_t version);" % s.cname)
        o(ind + 1, "bool operator==(const %s&) const = default;" % s.cname)
        o(0, "")
        o(ind, " private:")
        o(ind + 1, "result<void> encode_body(writer& w, int16_t version) const;")
        o(ind + 1, "static result<%s> decode_body(reader& rd, int16_t version);" % s.cname)
    else:
        o(ind + 1, "result<void> encode(writer& w, int16_t version) const;")
        o(ind + 1, "static result<%s> decode(reader& rd, int16_t version);" % s.cname)
        o(ind + 1, "bool operator==(const %s&) const = default;" % s.cname)
    o(ind, "};")
    o(0, "")


def fmt_versions(v):
    if v.empty:
        return "none"
    if v.hi is None:
        return "%d+" % v.lo
    if v.hi == v.lo:
        return "%d" % v.lo
    return "%d-%d" % (v.lo, v.hi)


# ---- samples (test support) ----

def sample_scalar(e, seed_expr, salt, default):
    if e in INT_RANGE:
        lo, _ = INT_RANGE[e]
        base = 10 + salt % 90
        # 10..109 plus seed % 10 fits every integer type and is never one of the schema defaults
        # (-2^31, -2, -1, 0, 1, 60000, 2^31 - 1); checked below anyway.
        if default is not None and str(default).lstrip("-").isdigit() and 10 <= int(default) <= 119:
            base = 120
        return "static_cast<%s>(%d + %s %% 10)" % (PRIMITIVE_CPP[e], base, seed_expr)
    if e == "bool":
        return "true" if str(default).lower() != "true" else "false"
    if e == "float64":
        return "(1.5 + %s)" % seed_expr
    if e == "uuid":
        return "sample_uuid(%s + %d)" % (seed_expr, salt)
    if e == "string":
        return "std::string(\"s%d-\") + std::to_string(%s)" % (salt, seed_expr)
    if e in ("bytes", "records"):
        return "sample_bytes(%s + %d)" % (seed_expr, salt)
    return None


def emit_sample(o, msg, s):
    q = qualified(msg, s)
    o(0, "void fill_sample(%s& out, int16_t version, int seed) {" % q)
    o(1, "static_cast<void>(version);")
    o(1, "static_cast<void>(seed);")
    o(1, "[[maybe_unused]] const bool flexible = %s;" % msg.flexible.cond(msg.lo, msg.hi))
    for i, f in enumerate(s.fields):
        present, _, _ = field_conds(msg, f)
        if present == "false":
            continue
        salt = i * 7 + 3
        o(1, "if (%s) {" % present)
        if f.is_array:
            st = scalar_cpp(msg, f, f.elem)
            if f.elem_is_struct:
                st = "%s::%s" % (msg.cname, st)
            o(2, "std::vector<%s> v_(2);" % st)
            o(2, "for (int j_ = 0; j_ < 2; ++j_) {")
            if f.elem_is_struct:
                o(3, "fill_sample(v_[static_cast<size_t>(j_)], version, (seed * 3 + j_ + 1) % 1000);")
            else:
                o(3, "v_[static_cast<size_t>(j_)] = %s;" % sample_scalar(f.elem, "(seed + j_)", salt, None))
            o(2, "}")
            o(2, "out.%s = std::move(v_);" % f.cname)
        elif f.elem_is_struct:
            st = "%s::%s" % (msg.cname, scalar_cpp(msg, f, f.elem))
            o(2, "%s v_;" % st)
            o(2, "fill_sample(v_, version, (seed + %d) %% 1000);" % (salt % 10 + 1))
            o(2, "out.%s = std::move(v_);" % f.cname)
        else:
            o(2, "out.%s = %s;" % (f.cname, sample_scalar(f.elem, "seed", salt, f.default)))
        o(1, "}")
    o(1, "if (flexible) {")
    o(2, "out.unknown_tagged_fields.push_back(tagged_field{%du, sample_bytes(seed)});" % unknown_tag(s))
    o(1, "}")
    o(0, "}")
    o(0, "")


def unknown_tag(s):
    tags = [f.tag for f in s.fields if f.tag is not None]
    return (max(tags) if tags else 0) + 100


# ---- files ----

HEADER_PRELUDE = """#pragma once
// GENERATED by src/protocol/gen/generate.py from src/protocol/schemas/*.json; do not edit.
// One struct per Kafka message holding every version of it; fields absent in a version keep
// their default. Wire rules: Kafka protocol guide, KIP-482 (flexible versions, tagged fields).

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ringlog/protocol/wire.h"

namespace ringlog::protocol {
"""


def generate(schema_dir, out_dir, shards):
    msgs = []
    for fn in sorted(os.listdir(schema_dir)):
        if fn.endswith(".json"):
            path = os.path.join(schema_dir, fn)
            with open(path) as fh:
                msgs.append(Message(json.load(fh), path))
    by_name = {m.name: m for m in msgs}
    requests = sorted([m for m in msgs if m.kind == "request"], key=lambda m: m.api_key)
    records = sorted([m for m in msgs if m.kind == "metadata"], key=lambda m: m.api_key)
    for r in requests:
        resp = r.name[:-len("Request")] + "Response"
        if resp not in by_name:
            fail("%s has no %s" % (r.name, resp))

    h = Out()
    h(0, HEADER_PRELUDE)
    for m in msgs:
        emit_struct_decl(h, 0, m, m.top)
    # api table and header helpers
    h(0, "/// Api keys of the requests this codec knows (Kafka's ApiKeys).")
    h(0, "enum class api_key : int16_t {")
    for r in requests:
        h(1, "%s = %d," % (snake(r.name[:-len("Request")]), r.api_key))
    h(0, "};")
    h(0, "")
    h(0, "/// One supported api: key and version range (inclusive), as an ApiVersions response lists it.")
    h(0, "struct api_version_range {")
    h(1, "int16_t api_key;")
    h(1, "int16_t lowest_version;")
    h(1, "int16_t highest_version;")
    h(1, "std::string_view name;")
    h(0, "};")
    h(0, "/// Every api this codec knows, ascending by key.")
    h(0, "std::span<const api_version_range> supported_apis();")
    h(0, "/// The range of `api_key`, or nullptr when unknown.")
    h(0, "const api_version_range* find_api(int16_t api_key);")
    h(0, "/// Request header version for a request of this api and version: 2 when the request version")
    h(0, "/// is flexible, else 1 (Kafka's ApiMessageType.requestHeaderVersion). Errors: unknown_api_key,")
    h(0, "/// unsupported_version.")
    h(0, "result<int16_t> request_header_version(int16_t api_key, int16_t api_version);")
    h(0, "/// Response header version: 1 when the response version is flexible, else 0; ApiVersions")
    h(0, "/// responses always use 0 so a client that sent a newer version can still read the error")
    h(0, "/// (KIP-511). Errors: unknown_api_key, unsupported_version.")
    h(0, "result<int16_t> response_header_version(int16_t api_key, int16_t api_version);")
    h(0, "")
    h(0, "/// KRaft metadata record types (the api keys of the records in __cluster_metadata).")
    h(0, "enum class metadata_record_type : int16_t {")
    for r in records:
        h(1, "%s = %d," % (r.cname, r.api_key))
    h(0, "};")
    h(0, "using metadata_record = std::variant<%s>;" % ", ".join(r.cname for r in records))
    h(0, "struct metadata_record_and_version {")
    h(1, "metadata_record record;")
    h(1, "int16_t version = 0;")
    h(1, "bool operator==(const metadata_record_and_version&) const = default;")
    h(0, "};")
    h(0, "/// Frame version Kafka's AbstractApiMessageSerde writes before every metadata record.")
    h(0, "inline constexpr uint32_t metadata_frame_version = 1;")
    h(0, "/// Appends a metadata record as Kafka frames it in a record value: unsigned varint frame")
    h(0, "/// version (1), unsigned varint record type (api key), unsigned varint version, then the record.")
    h(0, "/// Errors: those of the record's encode.")
    h(0, "result<void> encode_metadata_record(writer& w, const metadata_record& record, int16_t version);")
    h(0, "/// Reads one framed metadata record that fills `value` exactly (a record's value bytes).")
    h(0, "/// Errors: truncated, invalid_varint, unsupported_version (frame version other than 1, or a")
    h(0, "/// record version out of range), unknown_api_key, trailing_bytes, and the record's own.")
    h(0, "result<metadata_record_and_version> decode_metadata_record(std::span<const std::byte> value);")
    h(0, "")
    h(0, "}  // namespace ringlog::protocol")

    impls = [m for m in msgs]
    outs = [Out() for _ in range(shards)]
    for o in outs:
        o(0, "// GENERATED by src/protocol/gen/generate.py; do not edit.")
        o(0, "#include \"ringlog/protocol/messages.h\"")
        o(0, "")
        o(0, "#define RINGLOG_PROTOCOL_TRY_AT(expr, prefix)            \\")
        o(0, "  do {                                                  \\")
        o(0, "    auto&& try_at_ = (expr);                            \\")
        o(0, "    if (!try_at_.ok()) {                                \\")
        o(0, "      return with_prefix(try_at_.error(), prefix);      \\")
        o(0, "    }                                                   \\")
        o(0, "  } while (false)")
        o(0, "")
        o(0, "namespace ringlog::protocol {")
        o(0, "")
    for i, m in enumerate(impls):
        o = outs[i % shards]
        for s in m.order:
            emit_struct_impl(o, m, s)
        emit_top_impl(o, m)
    o = outs[0]
    o(0, "namespace {")
    o(0, "constexpr api_version_range apis_[] = {")
    for r in requests:
        o(1, "{%d, %d, %d, \"%s\"}," % (r.api_key, r.lo, r.hi, r.name[:-len("Request")]))
    o(0, "};")
    o(0, "}  // namespace")
    o(0, "")
    o(0, "std::span<const api_version_range> supported_apis() { return apis_; }")
    o(0, "")
    o(0, "const api_version_range* find_api(int16_t key) {")
    o(1, "for (const auto& a : apis_) {")
    o(2, "if (a.api_key == key) {")
    o(3, "return &a;")
    o(2, "}")
    o(1, "}")
    o(1, "return nullptr;")
    o(0, "}")
    o(0, "")
    for which, hv in (("request", ("2", "1")), ("response", ("1", "0"))):
        o(0, "result<int16_t> %s_header_version(int16_t key, int16_t version) {" % which)
        o(1, "const api_version_range* a = find_api(key);")
        o(1, "if (a == nullptr) {")
        o(2, "return error{errc::unknown_api_key, \"api key \" + std::to_string(key) + \" is not supported\"};")
        o(1, "}")
        o(1, "if (version < a->lowest_version || version > a->highest_version) {")
        o(2, "return error{errc::unsupported_version, std::string(a->name) + \" version \" + std::to_string(version) + \" is not supported\"};")
        o(1, "}")
        o(1, "switch (key) {")
        for r in requests:
            m = r if which == "request" else by_name[r.name[:-len("Request")] + "Response"]
            if which == "response" and r.api_key == 18:
                o(2, "case %d: return int16_t{0};  // ApiVersions: always header v0 (KIP-511)" % r.api_key)
                continue
            o(2, "case %d: return %s::is_flexible(version) ? int16_t{%s} : int16_t{%s};" % (r.api_key, m.cname, hv[0], hv[1]))
        o(2, "default: break;")
        o(1, "}")
        o(1, "return error{errc::unknown_api_key, \"api key \" + std::to_string(key) + \" is not supported\"};")
        o(0, "}")
        o(0, "")
    o(0, "result<void> encode_metadata_record(writer& w, const metadata_record& record, int16_t version) {")
    o(1, "w.write_unsigned_varint(metadata_frame_version);")
    o(1, "return std::visit([&](const auto& r) -> result<void> {")
    o(2, "using t = std::decay_t<decltype(r)>;")
    o(2, "w.write_unsigned_varint(static_cast<uint32_t>(t::api_key));")
    o(2, "w.write_unsigned_varint(static_cast<uint32_t>(static_cast<uint16_t>(version)));")
    o(2, "return r.encode(w, version);")
    o(1, "}, record);")
    o(0, "}")
    o(0, "")
    o(0, "namespace {")
    o(0, "template <typename T>")
    o(0, "result<metadata_record_and_version> decode_record_as(reader& rd, int16_t version) {")
    o(1, "auto r = T::decode(rd, version);")
    o(1, "if (!r.ok()) {")
    o(2, "return r.error();")
    o(1, "}")
    o(1, "if (rd.remaining() != 0) {")
    o(2, "return error{errc::trailing_bytes, std::string(T::schema_name) + \" v\" + std::to_string(version) + \": \" + std::to_string(rd.remaining()) + \" bytes after the record\"};")
    o(1, "}")
    o(1, "return metadata_record_and_version{metadata_record{std::move(*r)}, version};")
    o(0, "}")
    o(0, "}  // namespace")
    o(0, "")
    o(0, "result<metadata_record_and_version> decode_metadata_record(std::span<const std::byte> value) {")
    o(1, "reader rd(value);")
    o(1, "uint32_t head[3] = {};")
    o(1, "const char* what[3] = {\"frame version: \", \"record type: \", \"record version: \"};")
    o(1, "for (int i = 0; i < 3; ++i) {")
    o(2, "auto v = rd.read_unsigned_varint();")
    o(2, "if (!v.ok()) {")
    o(3, "return with_prefix(v.error(), std::string(\"metadata record \") + what[i]);")
    o(2, "}")
    o(2, "head[i] = *v;")
    o(1, "}")
    o(1, "if (head[0] != metadata_frame_version) {")
    o(2, "return error{errc::unsupported_version, \"metadata record frame version \" + std::to_string(head[0]) + \" (only 1 is known)\"};")
    o(1, "}")
    o(1, "if (head[2] > 0x7fff) {")
    o(2, "return error{errc::unsupported_version, \"metadata record version \" + std::to_string(head[2]) + \" is out of range\"};")
    o(1, "}")
    o(1, "const auto version = static_cast<int16_t>(head[2]);")
    o(1, "switch (head[1]) {")
    for r in records:
        o(2, "case %d: return decode_record_as<%s>(rd, version);" % (r.api_key, r.cname))
    o(2, "default: break;")
    o(1, "}")
    o(1, "return error{errc::unknown_api_key, \"metadata record type \" + std::to_string(head[1]) + \" is unknown\"};")
    o(0, "}")
    o(0, "")
    for o in outs:
        o(0, "}  // namespace ringlog::protocol")

    # samples
    sh = Out()
    sh(0, "#pragma once")
    sh(0, "// GENERATED by src/protocol/gen/generate.py; test support only (not in the protocol library).")
    sh(0, "// fill_sample sets every field present in `version` to a non-default value derived from seed,")
    sh(0, "// arrays to two elements, and (flexible versions) one unknown tagged field per struct.")
    sh(0, "#include \"ringlog/protocol/messages.h\"")
    sh(0, "")
    sh(0, "namespace ringlog::protocol::testing {")
    sh(0, "")
    for m in msgs:
        for s in m.order:
            sh(0, "void fill_sample(%s& out, int16_t version, int seed);" % qualified(m, s))
    sh(0, "")
    sh(0, "/// Calls f.template operator()<T>() for every message type (requests, responses, headers,")
    sh(0, "/// metadata records, LeaderChangeMessage).")
    sh(0, "template <typename F>")
    sh(0, "void for_each_message(F&& f) {")
    for m in msgs:
        sh(1, "f.template operator()<%s>();" % m.cname)
    sh(0, "}")
    sh(0, "")
    sh(0, "}  // namespace ringlog::protocol::testing")
    sc = Out()
    sc(0, "// GENERATED by src/protocol/gen/generate.py; do not edit.")
    sc(0, "#include \"ringlog/protocol/samples.h\"")
    sc(0, "")
    sc(0, "namespace ringlog::protocol::testing {")
    sc(0, "namespace {")
    sc(0, "uuid sample_uuid(int seed) {")
    sc(1, "uuid u;")
    sc(1, "for (size_t i = 0; i < u.value.size(); ++i) {")
    sc(2, "u.value[i] = static_cast<uint8_t>(seed * 7 + static_cast<int>(i) + 1);")
    sc(1, "}")
    sc(1, "return u;")
    sc(0, "}")
    sc(0, "bytes sample_bytes(int seed) {")
    sc(1, "return bytes{std::byte{0xab}, static_cast<std::byte>(seed & 0xff), std::byte{0x01}};")
    sc(0, "}")
    sc(0, "}  // namespace")
    sc(0, "")
    for m in msgs:
        for s in m.order:
            emit_sample(sc, m, s)
    sc(0, "}  // namespace ringlog::protocol::testing")

    def write(rel, text):
        path = os.path.join(out_dir, rel)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        old = None
        if os.path.exists(path):
            with open(path) as fh:
                old = fh.read()
        if old != text:
            with open(path, "w") as fh:
                fh.write(text)

    write("messages.h", h.text())
    for i, o in enumerate(outs):
        write("messages_%d.cc" % i, o.text())
    write("samples.h", sh.text())
    write("samples.cc", sc.text())


if __name__ == "__main__":
    if len(sys.argv) != 4:
        fail("usage: generate.py SCHEMA_DIR OUT_DIR SHARDS")
    generate(sys.argv[1], sys.argv[2], int(sys.argv[3]))
