# Protobuf through a Schema Registry, on Apache Kafka: messages written by
# Google's own Java library in Confluent's wire format (test/kafka/Proto,
# .proto files compiled by Google's protoc), schemas served by the test
# double of Confluent's REST API (test/kafka/SchemaRegistry).
#  - every scalar type, enums, nested messages (by path and into jsonb),
#    repeated fields and maps, oneof, proto3's optional, the well-known
#    types (Timestamp, Duration, wrappers, Struct), an imported file (a
#    schema reference), and a message that is not the schema's first
#    (message indexes), into the Postgres types that hold them; absent
#    fields as proto3 reads them (defaults), or NULL where a field has
#    presence;
#  - three versions of a schema on one topic, decoded by field name; the
#    registry killed while messages of a new version arrive: the view
#    waits (its worker terminated meanwhile, the server's registry URL
#    changed and back), and counts each message once when it is back;
#  - hostile messages (an unknown id, another magic byte, a message index
#    naming no message, truncated, a lying length, a string that is not
#    UTF-8, nesting 150 deep) are dead letters with their reason, and the
#    view goes on; a field of another wire type is skipped, as Google's
#    parsers skip it; a field given twice: the last, or merged;
#  - INSERT writes with the subject's registered schema and Google's
#    decoder reads back what ssp wrote; auto_register derives a schema from
#    the columns; keys in Protobuf both ways;
#  - domains read as their base types and checked (a view's dead letter
#    when a domain refuses a value), written and registered as their base
#    types; a column's precision applied to milliseconds; multidimensional
#    arrays and two columns of one field refused;
#  - a LATIN1 database: strings converted from UTF-8 when read (a character
#    LATIN1 lacks is a dead letter) and to UTF-8 when written.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $k = SspTest::start_kafka(partitions => 2);
my $b = $k->{bootstrap};
SspTest::kafka($k, 'topics', '--create', '--topic', $_, '--partitions', '2', '--replication-factor', '1')
  for qw(ptypes pnanos pevolve phostile pwritten pauto pauto2 pauto63 pkeyed pdomain pdomauto platin1);
my $reg = SspTest::start_registry($k);

my $node = SspTest::new_node('protobuf');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka
	  OPTIONS (brokers '$b', "schema.registry.url" '$reg->{url}');
});

# 1. Every type ------------------------------------------------------------------
my $addr_proto = <<'EOP';
syntax = "proto3";
package shared;
// an address, imported by the row's schema
message Addr {
  string city = 1;
  int32 zip = 2;
}
EOP
my $types_proto = <<'EOP';
syntax = "proto3";
package ssp.test;
import "shared/addr.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";
option java_package = "org.ssp.test";

message Unused { string x = 1; }

/* the message written: the schema's second (message index 1) */
message Row {
  enum Color { RED = 0; GREEN = 1; BLUE = 2; }
  bool b = 1;
  int32 i32 = 2;
  int64 i64 = 3;
  uint32 u32 = 4;
  uint64 u64 = 5;
  sint32 s32 = 6;
  sint64 s64 = 7;
  fixed32 f32 = 8;
  fixed64 f64 = 9;
  sfixed32 sf32 = 10;
  sfixed64 sf64 = 11;
  float fl = 12;
  double db = 13;
  string s = 14;
  bytes raw = 15;
  Color color = 16;
  shared.Addr addr = 17;
  repeated int32 nums = 18;
  repeated string tags = 19 [deprecated = true];
  map<string, int64> counts = 20;
  google.protobuf.Timestamp ts = 21;
  google.protobuf.Duration dur = 22;
  google.protobuf.Int64Value w64 = 23;
  google.protobuf.StringValue wstr = 24;
  google.protobuf.Struct st = 25;
  oneof contact { string email = 26; int64 phone = 27; }
  optional string opt = 28;
  reserved 40 to 45;
}
EOP
my @types_rows = (
	'{"b": true, "i32": -5, "i64": "9007199254740993", "u32": 4294967295, "u64": "18446744073709551615",'
	  . ' "s32": -2147483648, "s64": "-9223372036854775808", "f32": 7, "f64": "18446744073709551615",'
	  . ' "sf32": -7, "sf64": "-9", "fl": 1.5, "db": -2.25e10, "s": "h\u00e9llo \u2713 \"q\"",'
	  . ' "raw": "AP9B", "color": "GREEN", "addr": {"city": "Oslo", "zip": 150}, "nums": [1, -2, 3],'
	  . ' "tags": ["a", "b c"], "counts": {"x": 1}, "ts": "2024-01-01T00:00:00.123Z", "dur": "3723.004s",'
	  . ' "w64": "42", "wstr": "wrapped", "st": {"k": [1, "two", null, true]}, "email": "a@b.c", "opt": "here"}',
	'{}',
	'{"i32": 2147483647, "db": "NaN", "fl": "-Infinity", "color": 7, "phone": "5551234",'
	  . ' "addr": {}, "ts": "1969-12-31T23:59:59.999999Z", "dur": "-0.5s", "w64": "0", "wstr": "", "st": {},'
	  . ' "opt": ""}');
my $produced = SspTest::proto_produce($k, $reg->{url}, 'ptypes', $types_proto, \@types_rows,
	'--message', 'ssp.test.Row', '--reference', "shared/addr.proto=$addr_proto", '--partition', '0');
like($produced, qr/^produced 3 schema \d+$/, "Google's Protobuf wrote the typed messages");

$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE ptypes (b bool, i32 int, i64 bigint, u32 bigint, u64 numeric, s32 int, s64 bigint,
	    f32 bigint, f64 numeric, sf32 int, sf64 bigint, fl real, db float8, s text, raw bytea, color text,
	    addr jsonb, city text OPTIONS (field 'addr.city'), zip int OPTIONS (field 'addr.zip'), nums int[],
	    tags text[], counts jsonb, ts timestamptz, dur interval, w64 bigint, wstr text, st jsonb, email text,
	    phone bigint, opt text, absent text, p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'ptypes', format 'protobuf');
	CREATE VIEW ptypes_v WITH (ssp.continuous) AS SELECT * FROM ptypes;
});
SspTest::wait_views($node, 'postgres', 'ptypes_v');
my $cols = 'b, i32, i64, u32, u64, s32, s64, f32, f64, sf32, sf64, fl, db, s, raw, color, addr, city, zip, '
  . 'nums, tags, counts, ts, dur, w64, wstr, st, email, phone, opt, absent';
my $expected = join("\n",
	't|-5|9007199254740993|4294967295|18446744073709551615|-2147483648|-9223372036854775808|7|'
	  . '18446744073709551615|-7|-9|1.5|-22500000000|héllo ✓ "q"|\x00ff41|GREEN|{"zip": 150, "city": "Oslo"}|'
	  . 'Oslo|150|{1,-2,3}|{a,"b c"}|{"x": 1}|2024-01-01 00:00:00.123+00|01:02:03.004|42|wrapped|'
	  . '{"k": [1, "two", null, true]}|a@b.c||here|',
	'f|0|0|0|0|0|0|0|0|0|0|0|0||\x|RED||||{}|{}|{}|||||||||',
	'f|2147483647|0|0|0|0|0|0|0|0|0|-Infinity|NaN||\x|7|{"zip": 0, "city": ""}||0|{}|{}|{}|'
	  . '1969-12-31 23:59:59.999999+00|-00:00:00.5|0||{}||5551234||');
is($node->safe_psql('postgres', "SET timezone = 'UTC'; SET intervalstyle = 'postgres';
	SELECT $cols FROM ptypes_v ORDER BY i32, b"), $expected, 'every Protobuf type into its column, by the view');
is($node->safe_psql('postgres', "SET timezone = 'UTC'; SET intervalstyle = 'postgres';
	SELECT $cols FROM ptypes ORDER BY i32, b"), $expected, 'and by a scan');
is($node->safe_psql('postgres', q{SELECT count(*) FROM ssp.dead_letters WHERE view = 'ptypes_v'::regclass}),
	'0', 'no dead letters');

# a second view of the stream, reading other columns, a nested path among
# them: it catches up, joins the first's reader, which decodes for both
$node->safe_psql('postgres', q{
	CREATE VIEW ptypes_v2 WITH (ssp.continuous) AS
	  SELECT color, count(*) AS n, sum(i32) AS i32, max(ts) AS ts, max(city) AS city
	  FROM ptypes GROUP BY color;
});
SspTest::wait_views($node, 'postgres', 'ptypes_v2');
is($node->safe_psql('postgres', "SET timezone = 'UTC'; SELECT color, n, i32, ts, city FROM ptypes_v2 ORDER BY color"),
	"7|1|2147483647|1969-12-31 23:59:59.999999+00|\nGREEN|1|-5|2024-01-01 00:00:00.123+00|Oslo\nRED|1|0||",
	'a second view of other columns of the stream');

# 1b. The same fields into other types: read straight from the message, they
# are what the JSON path makes of them (a number into a timestamp as
# milliseconds, an enum as its name or number, bytes as bytea's text, a
# Timestamp into timestamp, a double into numeric by its shortest text, a
# uint64 past 2^63 into float8, a float into float8 by its text)
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE ptypes_x (b text, i32 timestamptz, i64 text, u64 float8, fl float8, db numeric,
	    raw text, color text, ts timestamp, s bytea, sf32 numeric(6,2), opt varchar(10))
	  SERVER kafka OPTIONS (topic 'ptypes', format 'protobuf');
});
is($node->safe_psql('postgres', q{SET timezone = 'UTC';
	SELECT b, i32, i64, u64, fl, db, raw, color, ts, s, sf32, opt FROM ptypes_x ORDER BY i32}),
	join("\n",
		'true|1969-12-31 23:59:59.995+00|9007199254740993|1.8446744073709552e+19|1.5|-22500000000|\x00ff41|GREEN|'
		  . '2024-01-01 00:00:00.123|\x68c3a96c6c6f20e29c9320227122|-7.00|here',
		'false|1970-01-01 00:00:00+00|0|0|0|0|\x|RED||\x|0.00|',
		'false|1970-01-25 20:31:23.647+00|0|0|-Infinity|NaN|\x|7|1969-12-31 23:59:59.999999|\x|0.00|'),
	'the fields into other types, as from their JSON');
SspTest::proto_produce($k, $reg->{url}, 'pnanos', $types_proto,
	[ '{"ts": "2024-01-01T00:00:00.123456789Z", "i64": "-7", "phone": "12"}', '{"ts": "0001-01-01T00:00:00Z"}' ],
	'--message', 'ssp.test.Row', '--reference', "shared/addr.proto=$addr_proto", '--partition', '0');
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE pnanos (ts timestamptz, ts0 timestamptz(0) OPTIONS (field 'ts'), i64 int,
	    email text, phone bigint)
	  SERVER kafka OPTIONS (topic 'pnanos', format 'protobuf');
});
is($node->safe_psql('postgres', q{SET timezone = 'UTC'; SELECT ts, ts0, i64, email, phone FROM pnanos ORDER BY ts}),
	"0001-01-01 00:00:00+00|0001-01-01 00:00:00+00|0||\n"
	  . "2024-01-01 00:00:00.123457+00|2024-01-01 00:00:00+00|-7||12",
	'a Timestamp of nanoseconds rounded, a typmod applied, the oneof member unset NULL');

# 2. Two versions of a schema on one topic: by field name -------------------------
my $v1 = 'syntax = "proto3"; message Order { int64 id = 1; string note = 2; float amount = 3; }';
my $v2 = 'syntax = "proto2"; package v2; message Order { required int64 id = 1; optional double amount = 4;'
  . ' optional string region = 5 [default = "eu"]; }';
SspTest::proto_produce($k, $reg->{url}, 'pevolve', $v1,
	[ '{"id": 1, "note": "a", "amount": 1.5}', '{"id": 2, "note": "b", "amount": 2.5}' ], '--partition', '0');
SspTest::proto_produce($k, $reg->{url}, 'pevolve', $v2,
	[ '{"id": 3, "amount": 10.25, "region": "us"}', '{"id": 4, "amount": 20}' ], '--partition', '0');
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE pevolve (id bigint, note text, amount float8, region text)
	  SERVER kafka OPTIONS (topic 'pevolve', format 'protobuf');
	CREATE VIEW pevolve_v WITH (ssp.continuous) AS
	  SELECT coalesce(region, '-') AS region, count(*) AS n, sum(amount) AS amount, count(note) AS notes,
	         sum(id) AS ids
	  FROM pevolve GROUP BY 1;
});
SspTest::wait_views($node, 'postgres', 'pevolve_v');
is($node->safe_psql('postgres', 'SELECT region, n, amount, notes, ids FROM pevolve_v ORDER BY region'),
	"-|2|4|2|3\neu|1|20|0|4\nus|1|10.25|0|3", 'two versions, by field name (a proto2 default too)');

# the registry down while messages of a new version arrive: the view waits, then counts each once
my $v3 = 'syntax = "proto3"; message Order { int64 id = 1; double amount = 4; string region = 5; bool v3 = 6; }';
my $v3id = SspTest::register_schema($reg, 'pevolve-value', { schema => $v3, schemaType => 'PROTOBUF' });
SspTest::stop_registry($reg);
SspTest::proto_produce($k, '-', 'pevolve', $v3,
	[ map { qq({"id": $_, "amount": 1, "region": "r3", "v3": true}) } 1 .. 20 ], '--id', $v3id, '--partition', '0');
ok($node->poll_query_until('postgres', q{
	SELECT status = 'waiting for schema registry' AND last_error ~ 'could not reach the schema registry'
	FROM ssp.views WHERE view = 'pevolve_v'::regclass}), 'a registry down: the view waits');
# while it waits: its worker terminated, and the server's registry moved away and back
$node->safe_psql('postgres', q{
	SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'ssp worker'});
$node->safe_psql('postgres', q{ALTER SERVER kafka OPTIONS (SET "schema.registry.url" 'http://127.0.0.1:1')});
ok($node->poll_query_until('postgres', q{
	SELECT status = 'waiting for schema registry' AND last_error ~ 'could not reach'
	FROM ssp.views WHERE view = 'pevolve_v'::regclass}), 'and waits on, its worker terminated, the URL changed');
$node->safe_psql('postgres', qq{ALTER SERVER kafka OPTIONS (SET "schema.registry.url" '$reg->{url}')});
sleep 2;
$reg = SspTest::start_registry($k, port => $reg->{port}, dir => $reg->{dir});
SspTest::wait_views($node, 'postgres', 'pevolve_v');
is($node->safe_psql('postgres', q{SELECT n, amount, ids FROM pevolve_v WHERE region = 'r3'}), '20|20|210',
	'and counts every message once the registry is back');
my ($papplied, $pdead) = split /\|/, $node->safe_psql('postgres', q{
	SELECT processed, dead_letters FROM ssp.views WHERE view = 'pevolve_v'::regclass});
is($pdead, '0', 'nothing went to the dead letters');
SspTest::report(faults => 1, produced => 4 + 20, applied => $papplied, dead_letters => $pdead,
	lost => 4 + 20 - $papplied - $pdead, twice => 0, broker => 'apache');

# 3. Hostile messages: dead letters with their reasons -----------------------------
my $ev = 'syntax = "proto3"; message Ev { string region = 1; int64 amount = 2; Ev next = 3; }';
my ($eid) = SspTest::proto_produce($k, $reg->{url}, 'phostile', $ev,
	[ '{"region": "eu", "amount": 5}', '{"region": "eu", "amount": 7, "next": {"next": {"region": "x"}}}' ],
	'--partition', '0') =~ /schema (\d+)/;
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE phostile (region text, amount bigint, next jsonb, p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'phostile', format 'protobuf');
	CREATE FOREIGN TABLE phostile_raw (v bytea, p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'phostile', format 'bytea');
	CREATE VIEW phostile_v WITH (ssp.continuous) AS
	  SELECT region, count(*) AS n, sum(amount) AS amount, count(next) AS nexts,
	         max(next->>'region') AS nregion, sum((next->>'amount')::bigint) AS namount
	  FROM phostile GROUP BY region;
	CREATE VIEW phostile_n WITH (ssp.continuous) AS SELECT count(*) AS n FROM phostile;
});
my $id = sprintf('%08x', $eid);
# a message nested 150 deep: field 3 in field 3 ...
my $deep = '';
for (1 .. 150)
{
	my $len = length($deep) / 2;
	my $varint = '';
	do { my $byte = $len & 0x7f; $len >>= 7; $varint .= sprintf('%02x', $byte | ($len ? 0x80 : 0)) } while ($len);
	$deep = '1a' . $varint . $deep;
}
$node->safe_psql('postgres', qq{
	INSERT INTO phostile_raw VALUES
	  ('\\x000000270f000a026575', 0),            -- id 9999: unknown
	  ('\\x01${id}000a026575', 0),               -- magic byte 1
	  ('\\x00${id}020a0a026575', 0),             -- message index 5
	  ('\\x00${id}001080', 0),                   -- ends inside a number
	  ('\\x00${id}000a326162', 0),               -- region's length 50, 2 bytes there
	  ('\\x00${id}000805', 0),                   -- region as a varint: skipped, as Google does
	  ('\\x00${id}000a02c328', 0),               -- region not UTF-8
	  ('\\x00${id}00${deep}', 0),                -- 150 deep
	  ('\\x00${id}000a0265751003', 0),           -- a good one: eu, 3
	  -- region twice (the last wins), next twice (merged): mm, 4, next {a, 2}
	  ('\\x00${id}000a01780a026d6d10041a030a01611a021002', 0);
});
SspTest::wait_views($node, 'postgres', 'phostile_v');
is($node->safe_psql('postgres', q{
	SELECT string_agg(CASE
	    WHEN error ~ 'has no schema 9999' THEN 'unknown id'
	    WHEN error ~ 'starts with byte 1, not the magic byte 0' THEN 'magic'
	    WHEN error ~ 'message index 5 names no message' THEN 'index'
	    WHEN error ~ 'ends inside a number' THEN 'truncated'
	    WHEN error ~ 'length of field 1 is past' THEN 'lying length'
	    WHEN error ~ 'not UTF-8' THEN 'utf8'
	    WHEN error ~ 'nested more than 100 deep' THEN 'deep'
	    ELSE error END, ', ' ORDER BY "offset")
	FROM ssp.dead_letters WHERE view = 'phostile_v'::regclass}),
	'unknown id, magic, index, truncated, lying length, utf8, deep',
	'each hostile message is a dead letter with its reason');
is($node->safe_psql('postgres', q{SELECT region, n, amount, nexts, nregion, namount FROM phostile_v ORDER BY 1}),
	"|1|0|0||\neu|3|15|1||0\nmm|1|4|1|a|2",
	'the good messages around them count; a field of another wire type is skipped; a field given twice: the last, or a message merged');
# a schema the registry holds but ssp cannot read (a proto2 group): its
# messages are dead letters that say so
my $bad = SspTest::register_schema($reg, 'phostile-bad',
	{ schema => 'syntax = "proto2"; message G { optional group Inner = 1 { optional int32 a = 2; } }',
	  schemaType => 'PROTOBUF' });
my $badid = sprintf('%08x', $bad);
$node->safe_psql('postgres', qq{INSERT INTO phostile_raw VALUES ('\\x00${badid}000b10010c', 0)});
SspTest::wait_views($node, 'postgres', 'phostile_v', 'phostile_n');
is($node->safe_psql('postgres', qq{SELECT error FROM ssp.dead_letters
	WHERE view = 'phostile_v'::regclass AND error ~ 'schema $bad'}) =~ /schema $bad is not a valid Protobuf schema: .*group/ ? 'ok' : 'no',
	'ok', 'a message of a schema ssp cannot read: a dead letter that says why');
is($node->safe_psql('postgres', q{SELECT n, (SELECT count(*) FROM ssp.dead_letters WHERE view = 'phostile_n'::regclass)
	FROM phostile_n}), '7|6',
	'a view of no column still reads each message: the malformed are dead letters (a field no column reads is not)');
# editions' message fields written as groups (message_encoding DELIMITED, of
# the file or of a field): refused as proto2's groups are (they were read
# as absent: NULL, no dead letter)
for my $delim (['phostile-delim', 'option features.message_encoding = DELIMITED; message O { int64 id = 1; I inner = 2; }'],
	['phostile-delim-field', 'message O { int64 id = 1; I inner = 2 [features.message_encoding = DELIMITED]; }'])
{
	my $id = SspTest::register_schema($reg, $delim->[0],
		{ schema => qq{edition = "2023"; $delim->[1] message I { string name = 1; }}, schemaType => 'PROTOBUF' });
	my $hex = sprintf('%08x', $id);
	# Outer{id: 7, inner: {name: "in"}} as Google writes it: inner as a group
	$node->safe_psql('postgres', qq{INSERT INTO phostile_raw VALUES ('\\x00${hex}000807130a02696e14', 0)});
	SspTest::wait_views($node, 'postgres', 'phostile_v');
	like($node->safe_psql('postgres', qq{SELECT error FROM ssp.dead_letters
		WHERE view = 'phostile_v'::regclass AND error ~ 'schema $id '}),
		qr/schema $id is not a valid Protobuf schema: .*field "inner" of message "O" is encoded as a group \(features.message_encoding = DELIMITED\)/,
		"a message of an editions schema with message_encoding DELIMITED ($delim->[0]): a dead letter that says why");
}

# 4. INSERT: the subject's schema, read back by Google's decoder ---------------------
my $w_proto = <<'EOP';
syntax = "proto3";
package ssp.w;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
message Other { string x = 1; }
message Written {
  enum Kind { NONE = 0; SMALL = 1; LARGE = 2; }
  int64 id = 1;
  optional string name = 2;
  double amount = 3;
  google.protobuf.Timestamp at = 4;
  repeated string tags = 5;
  Kind kind = 6;
  bytes raw = 7;
  map<string, int32> m = 8;
  google.protobuf.Int32Value maybe = 9;
  message Part { string sku = 1; uint32 qty = 2; }
  repeated Part parts = 10;
  sint64 delta = 11;
}
EOP
SspTest::register_schema($reg, 'pwritten-value', { schema => $w_proto, schemaType => 'PROTOBUF' });
my ($r4, $o4, $e4) = $node->psql('postgres', q{
	CREATE FOREIGN TABLE pwritten (id bigint, name text, amount numeric, at timestamptz, tags text[],
	    kind text, raw bytea, m jsonb, maybe int, parts jsonb, delta bigint)
	  SERVER kafka OPTIONS (topic 'pwritten', format 'protobuf', message 'ssp.w.Written');
	INSERT INTO pwritten VALUES
	  (1, 'one', 1.25, '2024-01-01 00:00:01.5+00', '{a,b}', 'LARGE', '\x00ff', '{"k": 3}', 7,
	   '[{"sku": "s1", "qty": 2}]', -3),
	  (2, NULL, 0, NULL, '{}', 'NONE', '\x', NULL, NULL, '[]', 0)});
is($e4, '', 'INSERT writes the subject\'s latest schema');
my $java = SspTest::proto_consume($k, $reg->{url}, 'pwritten', 2);
like($java, qr/\t\{"id":"1","name":"one","amount":1\.25,"at":"2024-01-01T00:00:01\.500Z","tags":\["a","b"\],"kind":"LARGE","raw":"AP8=","m":\{"k":3\},"maybe":7,"parts":\[\{"sku":"s1","qty":2\}\],"delta":"-3"\}/,
	"Google's decoder reads every field ssp wrote");
like($java, qr/\t\{"id":"2","amount":0\.0,"tags":\[\],"kind":"NONE","raw":"","m":\{\},"parts":\[\],"delta":"0"\}/,
	'and NULLs as absent fields');
is($node->safe_psql('postgres', "SET timezone = 'UTC';
	SELECT id, name, amount, at, tags, kind, raw, m, maybe, parts, delta FROM pwritten ORDER BY id"),
	qq(1|one|1.25|2024-01-01 00:00:01.5+00|{a,b}|LARGE|\\x00ff|{"k": 3}|7|[{"qty": 2, "sku": "s1"}]|-3\n)
	  . qq(2||0||{}|NONE|\\x|{}||[]|0), 'and ssp reads it back');
my ($r5, $o5, $e5) = $node->psql('postgres', q{
	CREATE FOREIGN TABLE pwritten_bad (id bigint, nope text)
	  SERVER kafka OPTIONS (topic 'pwritten', format 'protobuf', message 'ssp.w.Written');
	INSERT INTO pwritten_bad VALUES (1, 'x')});
like($e5, qr/Protobuf message "ssp.w.Written" has no field "nope"/, 'a column the message lacks: refused');
($r5, $o5, $e5) = $node->psql('postgres', q{
	INSERT INTO pwritten (id, kind) VALUES (3, 'HUGE')});
like($e5, qr/"HUGE" is not a value of enum "ssp.w.Written.Kind"/, 'an enum value the schema lacks: refused');
($r5, $o5, $e5) = $node->psql('postgres', q{INSERT INTO pwritten (id, at) VALUES (4, '10000-01-01 00:00:00+00')});
like($e5, qr/cannot write Protobuf field "at": "10000-01-01T00:00:00(\.0+)?Z?[^"]*" is out of a Timestamp's range \(years 1 to 9999\)/,
	'a time past a Timestamp\'s range: refused');
($r5, $o5, $e5) = $node->psql('postgres', q{INSERT INTO pwritten (id, at) VALUES (5, 'infinity')});
like($e5, qr/cannot write Protobuf field "at": a Timestamp cannot be infinite/, 'an infinite time: refused');
($r5, $o5, $e5) = $node->psql('postgres', q{
	CREATE FOREIGN TABLE pwritten_nomsg (id bigint)
	  SERVER kafka OPTIONS (topic 'pwritten', format 'protobuf', message 'ssp.w.Nope');
	INSERT INTO pwritten_nomsg VALUES (1)});
like($e5, qr/cannot insert into stream "pwritten_nomsg": its schema has no message "ssp.w.Nope"/,
	'option message naming no message of the schema: refused');
is($node->safe_psql('postgres', 'SELECT count(*) FROM pwritten'), '2', 'and nothing of them was written');
# an enum's number in text, as Google's JSON parser takes it: a value the
# schema names, or (an open enum) one it does not
$node->safe_psql('postgres', q{INSERT INTO pwritten (id, kind) VALUES (6, '2'), (7, '9')});
is($node->safe_psql('postgres', 'SELECT id, kind FROM pwritten WHERE id >= 6 ORDER BY id'), "6|LARGE\n7|9",
	'an enum written from its number in text reads back as its name, or its digits where it has none');
($r5, $o5, $e5) = $node->psql('postgres', q{INSERT INTO pwritten (id, kind) VALUES (8, ' 2')});
like($e5, qr/" 2" is not a value of enum "ssp.w.Written.Kind"/, 'but not with a space before it');

# auto_register: a schema from the columns
my ($r6, $o6, $e6) = $node->psql('postgres', q{
	CREATE FOREIGN TABLE pauto (id bigint, name text, amount float8, at timestamptz, tags text[], doc jsonb,
	    n numeric) SERVER kafka OPTIONS (topic 'pauto', format 'protobuf');
	INSERT INTO pauto VALUES (1, 'x', 1.5, '2024-01-01 00:00:00+00', '{a}', '{"z": 1}', 1.5)});
like($e6, qr/subject "pauto-value" has no schema in the schema registry/, 'no schema, no auto_register: refused');
$node->safe_psql('postgres', q{
	ALTER FOREIGN TABLE pauto OPTIONS (ADD auto_register 'true');
	INSERT INTO pauto SELECT g, 'n' || g, g * 1.25, timestamptz '2024-01-01 00:00:00+00' + g * interval '1 s',
	    ARRAY['t' || g], jsonb_build_object('g', g, 'l', jsonb_build_array(1, null)), g / 4.0
	  FROM generate_series(1, 3) g;
	INSERT INTO pauto VALUES (4, NULL, NULL, NULL, NULL, NULL, NULL);
});
my $ajava = SspTest::proto_consume($k, $reg->{url}, 'pauto', 4);
like($ajava, qr/\{"id":"3","name":"n3","amount":3\.75,"at":"2024-01-01T00:00:03Z","tags":\["t3"\],"doc":\{"g":3\.0,"l":\[1\.0,null\]\},"n":"0\.75000000000000000000"\}/,
	'a schema registered from the columns: Google reads it');
like($ajava, qr/\{"id":"4","tags":\[\]\}/, 'and NULLs as absent fields');
is($node->safe_psql('postgres', q{SELECT count(*), sum(id), sum(amount), count(name), sum(n) FROM pauto}),
	'4|10|7.5|3|1.50000000000000000000', 'and ssp reads them back');
is($node->safe_psql('postgres', q{SELECT doc FROM pauto WHERE id = 2}), '{"g": 2, "l": [1, null]}',
	'a jsonb column as a google.protobuf.Value, nulls inside it too');
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE "2pauto" (id bigint) SERVER kafka OPTIONS (topic 'pauto2', format 'protobuf', auto_register 'true');
	INSERT INTO "2pauto" VALUES (1)});
is($node->safe_psql('postgres', q{SELECT id FROM "2pauto"}), '1', 'a stream whose name begins with a digit');
# names of the longest legal length: the schema auto_register derives from
# them, Google's decoder reading what ssp wrote, a scan and a view (whose
# name is as long); with quotes, spaces and dots, which no Protobuf name
# can hold, auto_register refuses, saying why
my $hostile = 'p' . ('"q. ' x 15) . 'zz';
is(length($hostile), 63, 'a name of 63 bytes');
(my $hq = $hostile) =~ s/"/""/g;
my ($r63, $o63, $e63) = $node->psql('postgres', qq{
	CREATE FOREIGN TABLE "$hq" ("$hq" bigint)
	  SERVER kafka OPTIONS (topic 'pauto63', format 'protobuf', auto_register 'true');
	INSERT INTO "$hq" VALUES (1)});
like($e63, qr/cannot derive a Protobuf schema for stream .*is not a Protobuf field name.*\n.*HINT:  Register the subject's schema/s,
	'auto_register with names no Protobuf name can hold: refused, with a hint');
my $long = 'p' . ('q_9' x 20) . 'zz';
my $lview = substr($long, 0, 61) . '_v';
$node->safe_psql('postgres', qq{
	CREATE FOREIGN TABLE $long ($long bigint, $lview text)
	  SERVER kafka OPTIONS (topic 'pauto63', format 'protobuf', auto_register 'true');
	INSERT INTO $long VALUES (63, 'x'), (64, NULL);
	CREATE VIEW $lview WITH (ssp.continuous) AS SELECT count(*) AS n, sum($long) AS s, max($lview) AS m FROM $long;
});
SspTest::wait_views($node, 'postgres', $lview);
is($node->safe_psql('postgres', qq{SELECT n, s, m FROM $lview}), '2|127|x', 'a view of 63-byte names');
is($node->safe_psql('postgres', qq{SELECT $long, $lview FROM $long ORDER BY 1}), "63|x\n64|", 'a scan of them');
like(SspTest::proto_consume($k, $reg->{url}, 'pauto63', 2), qr/\{"[^"]+":"63","[^"]+":"x"\}/,
	"Google's decoder reads the message auto_register derived from them");

# keys in Protobuf, both ways
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE pkeyed (id bigint, shard text, amount float8)
	  SERVER kafka OPTIONS (topic 'pkeyed', format 'protobuf', key 'id,shard', key_format 'protobuf',
	    auto_register 'true');
	INSERT INTO pkeyed VALUES (1, 'a', 1.5), (2, 'b', 2.5);
});
is($node->safe_psql('postgres', 'SELECT id, shard, amount FROM pkeyed ORDER BY id'), "1|a|1.5\n2|b|2.5",
	'Protobuf keys written and read back');
my $keys = SspTest::proto_consume($k, $reg->{url}, 'pkeyed', 2, '--key');
like($keys, qr/\t\{"id":"1","shard":"a"\}/, "Google's decoder reads the keys");

# 5. Domains: read as their base types, then checked; written as them ------------
$node->safe_psql('postgres', q{
	CREATE DOMAIN pd_pos AS bigint CHECK (VALUE > 0);
	CREATE DOMAIN pd_at AS timestamptz CHECK (VALUE > '2000-01-01');
	CREATE DOMAIN pd_doc AS jsonb;
	CREATE DOMAIN pd_ints AS int[] CHECK (cardinality(VALUE) < 3);
	CREATE DOMAIN pd_name AS text CHECK (VALUE <> '');
	CREATE FOREIGN TABLE pdomain_w (id bigint, ms bigint, at timestamptz, name text, nums int[],
	    p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'pdomain', format 'protobuf', auto_register 'true');
	INSERT INTO pdomain_w VALUES (1, 1704067200654, '2024-01-01 00:00:00.5+00', 'x', '{1,2}', 0),
	  (-1, 1, '1999-01-01 00:00:00+00', '', '{1,2,3}', 1);
	CREATE FOREIGN TABLE pdomain (id pd_pos, ms pd_at, ms0 timestamptz(0) OPTIONS (field 'ms'), at pd_at,
	    name pd_name, doc pd_doc OPTIONS (field 'name'), nums pd_ints, p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'pdomain', format 'protobuf');
	CREATE VIEW pdomain_v WITH (ssp.continuous) AS SELECT * FROM pdomain;
});
SspTest::wait_views($node, 'postgres', 'pdomain_v');
is($node->safe_psql('postgres', q{SET timezone = 'UTC'; SELECT id, ms, ms0, at, name, doc, nums FROM pdomain_v}),
	'1|2024-01-01 00:00:00.654+00|2024-01-01 00:00:01+00|2024-01-01 00:00:00.5+00|x|"x"|{1,2}',
	'domains read as their base types (a string into a domain over jsonb a JSON string), a precision applied');
like($node->safe_psql('postgres', q{SELECT error FROM ssp.dead_letters WHERE view = 'pdomain_v'::regclass}),
	qr/^value for domain public\.pd_pos violates check constraint "pd_pos_check" \(stream "pdomain", topic "pdomain", partition 1, offset 0, column "id"\)$/,
	'a value its domain refuses: a dead letter');
for my $c ([ 'ms', 'pd_at' ], [ 'at', 'pd_at' ], [ 'nums', 'pd_ints' ])
{
	my ($col, $domain) = @$c;
	my ($rd, $od, $ed) = $node->psql('postgres', qq{
		CREATE FOREIGN TABLE pdomain_$col ($col $domain, p int OPTIONS (meta 'partition'))
		  SERVER kafka OPTIONS (topic 'pdomain', format 'protobuf');
		SELECT $col FROM pdomain_$col WHERE p = 1});
	like($ed, qr/value for domain $domain violates check constraint "${domain}_check"\nCONTEXT:  stream "pdomain_$col", topic "pdomain", partition 1, offset 0, column "$col"/,
		"a domain checks what a scan reads into it ($col)");
}
my ($rmd, $omd, $emd) = $node->psql('postgres', q{INSERT INTO pdomain_w (id, nums) VALUES (3, '{{1,2},{3,4}}')});
like($emd, qr/cannot write Protobuf field "nums": an element of a repeated field cannot be an array \(Protobuf has no multidimensional arrays\)/,
	'a multidimensional array: refused, saying why');
($rmd, $omd, $emd) = $node->psql('postgres', q{
	CREATE FOREIGN TABLE pdomain_twice (id bigint, id2 bigint OPTIONS (field 'id'))
	  SERVER kafka OPTIONS (topic 'pdomain', format 'protobuf');
	INSERT INTO pdomain_twice VALUES (4, 4)});
like($emd, qr/cannot insert into stream "pdomain_twice": columns "id" and "id2" both write field "id"/,
	'two columns of one field: refused');
is($node->safe_psql('postgres', 'SELECT count(*) FROM pdomain_w'), '2', 'and nothing of them was written');
# auto_register: the schema of the domains' base types
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE pdomauto (id pd_pos, at pd_at, doc pd_doc, nums pd_ints, name pd_name)
	  SERVER kafka OPTIONS (topic 'pdomauto', format 'protobuf', auto_register 'true');
	INSERT INTO pdomauto VALUES (1, '2024-01-01 00:00:01+00', '{"a": [1]}', '{1,2}', 'n'), (2, NULL, NULL, NULL, NULL);
});
require HTTP::Tiny;
like(HTTP::Tiny->new->get("$reg->{url}/subjects/pdomauto-value/versions/latest")->{content},
	qr/optional int64 id = 1;\\n  google.protobuf.Timestamp at = 2;\\n  google.protobuf.Value doc = 3;\\n  repeated int32 nums = 4;\\n  optional string name = 5;/,
	'auto_register: domains as their base types');
is($node->safe_psql('postgres', q{SET timezone = 'UTC'; SELECT id, at, doc, nums, name FROM pdomauto ORDER BY id}),
	qq(1|2024-01-01 00:00:01+00|{"a": [1]}|{1,2}|n\n2|||{}|), 'and ssp reads them back');
like(SspTest::proto_consume($k, $reg->{url}, 'pdomauto', 2),
	qr/\{"id":"1","at":"2024-01-01T00:00:01Z","doc":\{"a":\[1\.0\]\},"nums":\[1,2\],"name":"n"\}/,
	"and so does Google's decoder");

# 6. A LATIN1 database: Protobuf's strings are UTF-8 on the wire ------------------
$node->safe_psql('postgres',
	q{CREATE DATABASE latin1 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0});
$node->safe_psql('latin1', qq{
	CREATE EXTENSION ssp;
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka
	  OPTIONS (brokers '$b', "schema.registry.url" '$reg->{url}');
	CREATE FOREIGN TABLE platin1 (id int, s text, tags text[], doc jsonb, p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'platin1', format 'protobuf', auto_register 'true');
	CREATE FOREIGN TABLE platin1_raw (v bytea, p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'platin1', format 'bytea');
	INSERT INTO platin1 VALUES (1, U&'caf\\00E9', ARRAY[U&'\\00FC'], jsonb_build_object(U&'\\00DF', U&'\\00E0'), 0);
});
# after the framing: message index 0, s "café", id 1, doc {"ß": "à"} (a Struct), tags ["ü"]
is($node->safe_psql('latin1', q{SELECT encode(substring(v from 6), 'hex') FROM platin1_raw}),
	'001205636166c3a90801220e2a0c0a0a0a02c39f12041a02c3a01a02c3bc',
	'INSERT writes the strings in UTF-8');
is($node->safe_psql('latin1', q{
	SELECT id, s = U&'caf\00E9', tags = ARRAY[U&'\00FC'], doc = jsonb_build_object(U&'\00DF', U&'\00E0')
	FROM platin1}), '1|t|t|t', 'and reads them back in LATIN1, straight and through JSON');
# another writer's string with a character LATIN1 lacks: id 2, s "€"
$node->safe_psql('latin1', q{
	INSERT INTO platin1_raw SELECT substring(v from 1 for 6) || '\x08021203e282ac'::bytea, 1 FROM platin1_raw;
	CREATE VIEW platin1_v WITH (ssp.continuous) AS SELECT id, s FROM platin1;
});
my ($rl, $ol, $el) = $node->psql('latin1', q{SELECT id, s FROM platin1 WHERE p = 1});
like($el, qr/character with byte sequence 0xe2 0x82 0xac in encoding "UTF8" has no equivalent in encoding "LATIN1"\nCONTEXT:  stream "platin1", topic "platin1", partition 1, offset 0, column "s"/,
	'a character LATIN1 lacks: the scan fails, saying which');
SspTest::wait_views($node, 'latin1', 'platin1_v');
is($node->safe_psql('latin1', q{SELECT id, s = U&'caf\00E9' FROM platin1_v}), '1|t', 'the view has the other');
like($node->safe_psql('latin1', q{SELECT error FROM ssp.dead_letters WHERE view = 'platin1_v'::regclass}),
	qr/^character with byte sequence 0xe2 0x82 0xac in encoding "UTF8" has no equivalent in encoding "LATIN1" \(stream "platin1", topic "platin1", partition 1, offset 0, column "s"\)$/,
	'and a dead letter for it');

# option checks
my ($r9, $o9, $e9) = $node->psql('postgres', q{
	CREATE FOREIGN TABLE pbad (x int) SERVER kafka OPTIONS (topic 'pauto', format 'json', message 'a.B');
	SELECT * FROM pbad});
like($e9, qr/option "message", which applies only to format protobuf/, 'option message without protobuf: refused');
($r9, $o9, $e9) = $node->psql('postgres', q{
	CREATE FOREIGN TABLE pbad2 (x int) SERVER kafka OPTIONS (topic 'pauto', format 'protobuf', message 'a..B')});
like($e9, qr/invalid Protobuf message name "a..B"/, 'a message name that is not one: refused');

done_testing();
