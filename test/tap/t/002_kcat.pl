# Interoperability with a client we did not write: kcat reads what INSERT
# produced, and SELECT reads what kcat produced, keys and headers included.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_broker(topics => ['to_kcat:4', 'from_kcat:4']);
my $bootstrap = $broker->{bootstrap};
my $node = SspTest::new_node('kcat');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$bootstrap');
	CREATE FOREIGN TABLE to_kcat (id int, name text, tags text[], trace text OPTIONS (meta 'header:trace'))
	  SERVER kafka OPTIONS (topic 'to_kcat', key 'id');
	CREATE FOREIGN TABLE from_kcat (id bigint, name text, city text OPTIONS (field 'address.city'),
	    k text OPTIONS (meta 'key'), trace text OPTIONS (meta 'header:trace'))
	  SERVER kafka OPTIONS (topic 'from_kcat');
});

# Postgres to kcat
$node->safe_psql('postgres', q{
	INSERT INTO to_kcat SELECT g, 'name ' || g, ARRAY['a', 'b "' || g || '"'], 'tr-' || g
	FROM generate_series(1, 1000) g;
});
my ($out, $err);
IPC::Run::run(['kcat', '-C', '-b', $bootstrap, '-t', 'to_kcat', '-e', '-q', '-f', '%k|%s|%h\n'],
	'>', \$out, '2>', \$err) or die "kcat failed: $err";
my @lines = sort { (split /\|/, $a)[0] <=> (split /\|/, $b)[0] } split /\n/, $out;
is(scalar(@lines), 1000, 'kcat reads every message INSERT produced');
is($lines[0], '1|{"name":"name 1","tags":["a","b \"1\""]}|trace=tr-1',
	'kcat sees the key, the JSON value and the header');
is($lines[999], '1000|{"name":"name 1000","tags":["a","b \"1000\""]}|trace=tr-1000',
	'the last message too');

# kcat to Postgres
my $input = join('', map {
	"$_\t{\"id\": $_, \"name\": \"kcat $_\", \"address\": {\"city\": \"c" . ($_ % 3) . "\"}}\n"
} 1 .. 1000);
IPC::Run::run(['kcat', '-P', '-b', $bootstrap, '-t', 'from_kcat', '-K', "\t", '-H', 'trace=from-kcat'],
	'<', \$input, '2>', \$err) or die "kcat failed: $err";
is($node->safe_psql('postgres', q{
	SELECT count(*), sum(id), count(DISTINCT city), bool_and(k = id::text),
	       bool_and(name = 'kcat ' || id), bool_and(trace = 'from-kcat')
	FROM from_kcat}),
	'1000|500500|3|t|t|t', 'SELECT reads what kcat produced, key and header included');

$node->stop;
done_testing();
