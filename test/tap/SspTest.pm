# SspTest: what the TAP tests of ssp share: a test broker of their own (so
# they can break it through its control socket), an Apache Kafka cluster of
# their own (test/kafka/kafka_ctl), a Schema Registry test double and Apache
# Avro's encoder (test/kafka/*.java), and a Postgres node with ssp preloaded.
package SspTest;

use strict;
use warnings;
use Cwd ();
use File::Basename ();
use IO::Socket::INET;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my @brokers;
my @kafkas;
my @registries;
my $pg_config = '/usr/lib/postgresql/15/bin/pg_config';

# the source tree (make test sets it; make installcheck runs from the tree)
$ENV{SSP_SRC} //= Cwd::abs_path(File::Basename::dirname(__FILE__) . '/../..');

# start_broker(brokers => N, topics => ['name:partitions', ...])
sub start_broker
{
	my (%args) = @_;
	my $dir = PostgreSQL::Test::Utils::tempdir('broker');
	my @cmd = ("$ENV{SSP_SRC}/test/broker/ssp_test_broker",
		'--brokers', $args{brokers} // 1,
		'--bootstrap-file', "$dir/bootstrap", '--control-file', "$dir/control",
		map { ('--topic', $_) } @{ $args{topics} // [] });
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open(STDERR, '>', "$dir/broker.log");
		exec(@cmd) or die "exec: $!";
	}
	for (1 .. 100)
	{
		last if -f "$dir/control";
		select(undef, undef, undef, 0.1);
	}
	die "test broker did not start" unless -f "$dir/control";
	my $broker = {
		pid => $pid,
		bootstrap => slurp_file("$dir/bootstrap") =~ s/\s+$//r,
		port => slurp_file("$dir/control") =~ s/\s+$//r,
	};
	push @brokers, $broker;
	# like a real Kafka, consumers do not create topics
	ctl($broker, 'apiversion Metadata 0 4');
	return $broker;
}

# ctl($broker, 'down all'): a control command; dies unless it succeeds.
sub ctl
{
	my ($broker, $command) = @_;
	my $sock = IO::Socket::INET->new(
		PeerAddr => '127.0.0.1',
		PeerPort => $broker->{port},
		Timeout => 10) or die "control socket: $!";
	print $sock "$command\n";
	my $reply = <$sock> // '';
	close($sock);
	chomp $reply;
	die "broker command \"$command\" failed: $reply" unless $reply =~ /^ok/;
	note "broker: $command: $reply";
	return $reply;
}

# start_kafka(nodes => N, partitions => N, scram => 'user:password',
# plain => ['user:password', ...], conf => ['line', ...]): an Apache Kafka
# cluster (KRaft) of the test's own, stopped when the test ends.  Returns
# { dir, bootstrap, nodes } and, with scram or plain, bootstrap_sasl: a
# SASL_PLAINTEXT listener where ACLs are enforced.
sub start_kafka
{
	my (%args) = @_;
	my $dir = PostgreSQL::Test::Utils::tempdir('kafka');
	my @cmd = ("$ENV{SSP_SRC}/test/kafka/kafka_ctl", 'start', $dir,
		'--nodes', $args{nodes} // 1, '--partitions', $args{partitions} // 4,
		($args{scram} ? ('--scram', $args{scram}) : ()),
		(map { ('--plain', $_) } @{ $args{plain} // [] }),
		map { ('--conf', $_) } @{ $args{conf} // [] });
	my $k = { dir => $dir, nodes => $args{nodes} // 1 };
	push @kafkas, $k;
	my ($out, $err) = ('', '');
	IPC::Run::run(\@cmd, '>', \$out, '2>', \$err)
	  or die "Apache Kafka did not start: $err";
	$k->{bootstrap} = slurp_file("$dir/bootstrap") =~ s/\s+$//r;
	$k->{bootstrap_sasl} = slurp_file("$dir/bootstrap-sasl") =~ s/\s+$//r
	  if -f "$dir/bootstrap-sasl";
	note "Apache Kafka at $k->{bootstrap}";
	return $k;
}

# start_any_broker(topics => ['name:partitions', ...]): the broker for a
# test that breaks Postgres, not the broker: Apache Kafka (one node, the
# topics created) when SSP_TEST_KAFKA is apache, as make test sets it, else
# the test broker.  Returns { bootstrap, kind } ('apache' or 'mock', for
# report's broker).
sub start_any_broker
{
	my (%args) = @_;
	if (($ENV{SSP_TEST_KAFKA} // 'mock') ne 'apache')
	{
		my $b = start_broker(%args);
		$b->{kind} = 'mock';
		return $b;
	}
	my $k = start_kafka(partitions => 4);
	for my $t (@{ $args{topics} // [] })
	{
		my ($name, $parts) = split /:/, $t;
		kafka($k, 'topics', '--create', '--topic', $name, '--partitions', $parts // 4);
	}
	$k->{kind} = 'apache';
	return $k;
}

# kafka($k, 'topics', '--create', ...): a kafka_ctl command on the cluster
# (topics, configs, groups, acls, kill N, restart N, wait N, run CLASS);
# returns its output, dies unless it succeeds.
sub kafka
{
	my ($k, $command, @args) = @_;
	my @cmd = ("$ENV{SSP_SRC}/test/kafka/kafka_ctl", $command, $k->{dir}, @args);
	my ($out, $err) = ('', '');
	IPC::Run::run(\@cmd, '>', \$out, '2>', \$err)
	  or die "kafka_ctl @cmd[1..$#cmd] failed: $err$out";
	return $out;
}

# new_node($name, %opts): a started node with ssp in shared_preload_libraries
# and the extension created in database postgres.  allows_streaming => 1
# prepares it for standbys; conf => "..." adds lines to postgresql.conf;
# install => $root runs it from a copy of the installation (install_version).
sub new_node
{
	my ($name, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name,
		$opts{install} ? (install_path => pg_bindir($opts{install}) =~ s{/bin$}{}r) : ());
	$node->init(allows_streaming => $opts{allows_streaming} // 0);
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'ssp'\nmax_worker_processes = 32\nrestart_after_crash = on\n"
		  . ($opts{conf} // ''));
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION ssp');
	return $node;
}

# git_command(): git, on the history of the tree under test (SSP_GIT_DIR
# when make test runs in a copy of it)
sub git_command
{
	return $ENV{SSP_GIT_DIR} ? "git --git-dir='$ENV{SSP_GIT_DIR}'" : "git -C '$ENV{SSP_SRC}'";
}

# has_commit($commit): whether the tree's history holds the commit (not
# in a tarball of the tree, nor in a shallow clone)
sub has_commit
{
	my ($commit) = @_;
	my $git = git_command();
	return system("$git cat-file -e '$commit^{commit}' >/dev/null 2>&1") == 0;
}

# install_version($version, $commit): a copy of the test's Postgres
# installation with ssp as it was at that commit, built from the history
# of the tree (git archive; SSP_GIT_DIR when make test runs in a copy of
# it); returns the copy's root.  Give node(..., install => $root) to run it.
sub install_version
{
	my ($version, $commit) = @_;
	my $root = "$PostgreSQL::Test::Utils::tmp_check/install-$version";
	my $src = "$PostgreSQL::Test::Utils::tmp_check/ssp-$version";
	my $git = git_command();
	mkdir $src or die "$src: $!";
	system("$git archive $commit | tar -C '$src' -xf -") == 0
	  or die "cannot read ssp $version ($commit) from git's history: the test needs a clone with it";
	# make test's private installation, or (make installcheck) the system's
	if ($ENV{SSP_INSTALL})
	{
		system('cp', '-a', $ENV{SSP_INSTALL}, $root) == 0 or die "cannot copy $ENV{SSP_INSTALL}";
	}
	else
	{
		my ($lib, $share) = map { `$pg_config $_` =~ s/\s+$//r } ('--pkglibdir', '--sharedir');
		$lib =~ s{/lib$}{};
		system("mkdir -p '$root$lib' '$root$share' && cp -a '$lib/.' '$root$lib/' && cp -a '$share/.' '$root$share/'") == 0
		  or die "cannot copy the installation in $lib and $share";
	}
	system("rm -rf '$root'/usr/lib/postgresql/*/lib/ssp.so '$root'/usr/lib/postgresql/*/lib/bitcode/ssp* "
		  . "'$root'/usr/share/postgresql/*/extension/ssp[.-]*") == 0 or die "cannot remove ssp from $root";
	system("make -s -C '$src' PG_CONFIG=$pg_config >'$src.log' 2>&1 && "
		  . "make -s -C '$src' PG_CONFIG=$pg_config DESTDIR='$root' install >>'$src.log' 2>&1") == 0
	  or die "cannot build ssp $version; see $src.log";
	return $root;
}

# install_current($root): this tree's ssp installed over the one in $root,
# as a package upgrade would (the files replaced, not rewritten in place).
sub install_current
{
	my ($root) = @_;
	system("make -s -C '$ENV{SSP_SRC}' PG_CONFIG=$pg_config DESTDIR='$root' install >/dev/null") == 0
	  or die "cannot install ssp into $root";
}

# pg_bindir($root): the Postgres binaries of an installation's copy.
sub pg_bindir
{
	my ($root) = @_;
	return "$root" . `$pg_config --bindir` =~ s/\s+$//r;
}

# wait_views($node, $db, @views): ssp.wait on each; dies if one times out.
sub wait_views
{
	my ($node, $db, @views) = @_;
	for my $v (@views)
	{
		my $r = $node->safe_psql($db, "SELECT ssp.wait('$v', '180 s')");
		next if $r eq 't';
		my $state = $node->safe_psql($db, "SELECT * FROM ssp.views WHERE view = '$v'::regclass");
		die "ssp.wait('$v') timed out; ssp.views: $state";
	}
}

# wait_restarted($node): after a SIGKILL of a backend, wait until Postgres
# has restarted every backend and takes queries again.  The first attempts
# may see the server go away under them, so failures are retried.
sub wait_restarted
{
	my ($node) = @_;
	# the postmaster notices the death and stops everything first
	select(undef, undef, undef, 0.5);
	for (1 .. 600)
	{
		return if eval { $node->safe_psql('postgres', 'SELECT 1'); 1 };
		select(undef, undef, undef, 0.1);
	}
	die 'server did not come back';
}

# report(%figures): one line of the reliability report that make test
# prints at the end (test/run_tests.sh): test, faults injected, messages
# produced, applied by the views, dead letters, lost and counted twice, and
# the broker the figures come from (broker => 'apache'; the test broker,
# librdkafka's mock cluster, by default).
sub report
{
	my (%f) = @_;
	my $file = $ENV{SSP_RELIABILITY_REPORT} or return;
	my $test = $0 =~ s{.*/}{}r =~ s{\.pl$}{}r;
	open(my $fh, '>>', $file) or die "$file: $!";
	print $fh join("\t", $test, (map { $f{$_} // 0 } qw(faults produced applied dead_letters lost twice)),
		$f{broker} // 'mock'), "\n";
	close($fh);
}

# lost_and_twice($node, $db, $view, $truth): rows of query truth missing
# from query view, and rows of view beyond truth (EXCEPT ALL each way).
sub lost_and_twice
{
	my ($node, $db, $view, $truth) = @_;
	return split /\|/, $node->safe_psql($db,
		"SELECT (SELECT count(*) FROM ($truth EXCEPT ALL $view) l), (SELECT count(*) FROM ($view EXCEPT ALL $truth) t)");
}

# read_published($node, $db, $topic): what a view of (region, n, total)
# with ssp.output_topic published, read back from its topic (a stream of
# the server kafka, named published) into the tables changes (every record)
# and kept (each change once, as a consumer keeps it: a record whose number
# is above the last one seen on its partition), for check_published.
sub read_published
{
	my ($node, $db, $topic) = @_;
	$node->safe_psql($db, qq{
		CREATE FOREIGN TABLE published (region text, n bigint, total numeric, _op text, _seq bigint,
		    _before jsonb, p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
		  SERVER kafka OPTIONS (topic '$topic');
		CREATE TABLE changes AS SELECT * FROM published;
		CREATE TABLE kept AS SELECT * FROM (
		  SELECT c.*, max(_seq) OVER (PARTITION BY p ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS seen
		  FROM changes c) x WHERE seen IS NULL OR _seq > seen;
	});
}

# check_published($node, $view, $label): what a view with ssp.output_topic
# published, read back into the tables changes (every record: region, n,
# total, _seq, _before) and kept (each change once), holds: each key's
# changes chain unbroken from its insert, each key's last change is the
# view's row, and the last change published is recorded.
sub check_published
{
	my ($node, $view, $label) = @_;
	is($node->safe_psql('postgres', q{
		SELECT count(*) FROM (
		  SELECT _before, lag(jsonb_build_object('region', region, 'n', n, 'total', total))
		           OVER (PARTITION BY region ORDER BY _seq) AS prev
		  FROM kept) x WHERE _before IS DISTINCT FROM prev}),
		'0', "${label}each key's changes form an unbroken chain, from its insert");
	is(differences($node, 'postgres', "SELECT region, n, total FROM $view",
			'SELECT * FROM (SELECT DISTINCT ON (region) region, n, total FROM kept ORDER BY region, _seq DESC) l'),
		'0', "${label}each key's last change is the view's row");
	is($node->safe_psql('postgres',
			"SELECT published_seq = (SELECT max(_seq) FROM changes) FROM ssp.continuous_views WHERE view = '$view'::regclass"),
		't', "${label}the last change published is recorded");
}

# differences($node, $db, $a, $b): rows of query a not in b, and of b not in
# a (EXCEPT ALL both ways); 0 when they are equal.
sub differences
{
	my ($node, $db, $a, $b) = @_;
	return $node->safe_psql($db,
		"SELECT count(*) FROM (($a EXCEPT ALL $b) UNION ALL ($b EXCEPT ALL $a)) d");
}

# equal_to_queries($node, $db, $label, \%truth, @views): once each view
# has caught up, one test per view that it equals its query ($truth{view},
# over a table that got the same rows as its streams)
sub equal_to_queries
{
	my ($node, $db, $label, $truth, @views) = @_;
	wait_views($node, $db, @views);
	for my $v (@views)
	{
		Test::More::is(differences($node, $db, "SELECT * FROM $v", $truth->{$v}),
			'0', "$label: $v equals its query");
	}
}

# start_registry($k, user => 'u:p', token => 'T', port => P, dir => D): the
# Schema Registry test double (test/kafka/SchemaRegistry.java) in the
# background, run with the classpath of Kafka cluster $k; stopped when the
# test ends.  Returns { url, port, dir, proc }; stop_registry and
# start_registry($k, %{ $r }) again on the same dir and port serve the same
# ids.
sub start_registry
{
	my ($k, %args) = @_;
	my $dir = $args{dir} // PostgreSQL::Test::Utils::tempdir('registry');
	unlink "$dir/port";
	my @cmd = ("$ENV{SSP_SRC}/test/kafka/kafka_ctl", 'run', $k->{dir}, 'SchemaRegistry', $dir,
		($args{port} ? ('--port', $args{port}) : ()),
		($args{user} ? ('--user', $args{user}) : ()),
		($args{token} ? ('--token', $args{token}) : ()));
	my $out = '';
	my $proc = IPC::Run::start(\@cmd, '>', "$dir/stdout.log", '2>', "$dir/stderr.log");
	for (1 .. 600)
	{
		last if -s "$dir/port";
		die "the schema registry did not start: " . slurp_file("$dir/stderr.log")
		  unless $proc->pumpable;
		select(undef, undef, undef, 0.1);
	}
	die "the schema registry did not start in 60 s" unless -s "$dir/port";
	my $port = slurp_file("$dir/port") =~ s/\s+$//r;
	my $r = { %args, url => "http://127.0.0.1:$port", port => $port, dir => $dir, proc => $proc };
	push @registries, $r;
	note "schema registry at $r->{url}";
	return $r;
}

# stop_registry($r): SIGKILL it (connections to its port are refused).
sub stop_registry
{
	my ($r) = @_;
	$r->{proc}->kill_kill;
	$r->{proc}->finish;
	@registries = grep { $_ != $r } @registries;
}

# registry_control($r, 'fail?status=503&seconds=30'): a fault of the test
# registry, or 'stats'; returns its answer, {"schema_gets": N, "requests": N}.
sub registry_control
{
	my ($r, $what) = @_;
	require HTTP::Tiny;
	my $method = $what eq 'stats' ? 'GET' : 'POST';
	my $res = HTTP::Tiny->new->request($method, "$r->{url}/control/$what");
	die "registry control $what: $res->{status} $res->{content}" unless $res->{success};
	return $res->{content};
}

# register_schema($r, $subject, $schema, @references): register a schema (its
# JSON text, or a hash such as {schema => TEXT, schemaType => 'PROTOBUF'})
# by the REST API, with references ({name, subject, version} hashes) to
# other subjects' schemas; returns its id.
sub register_schema
{
	my ($r, $subject, $schema, @references) = @_;
	require HTTP::Tiny;
	require JSON::PP;
	# a schema that is a hash: {schema => TEXT, schemaType => 'PROTOBUF'}
	my %body = ref($schema) ? %$schema : (schema => $schema);
	my $res = HTTP::Tiny->new->request('POST', "$r->{url}/subjects/$subject/versions",
		{ headers => { 'Content-Type' => 'application/vnd.schemaregistry.v1+json',
				($r->{user} ? (Authorization => 'Basic ' . encode_base64_line($r->{user})) : ()),
				($r->{token} ? (Authorization => "Bearer $r->{token}") : ()) },
		  content => JSON::PP->new->encode({ %body,
				(@references ? (references => \@references) : ()) }) });
	die "registering $subject: $res->{status} $res->{content}" unless $res->{success};
	$res->{content} =~ /"id"\s*:\s*(\d+)/ or die "no id in $res->{content}";
	return $1;
}

sub encode_base64_line
{
	require MIME::Base64;
	return MIME::Base64::encode_base64($_[0], '');
}

# avro_produce($k, $registry_url_or_dash, $topic, $schema_json, \@lines, @options):
# messages encoded by Apache Avro's Java library (test/kafka/AvroProduce);
# returns its summary line ("produced N schema ID").
sub avro_produce
{
	my ($k, $url, $topic, $schema, $lines, @opts) = @_;
	my $dir = PostgreSQL::Test::Utils::tempdir('avro');
	my $file = "$dir/schema.avsc";
	open(my $fh, '>', $file) or die "$file: $!";
	print $fh $schema;
	close($fh);
	my $in = join('', map { "$_\n" } @$lines);
	my @cmd = ("$ENV{SSP_SRC}/test/kafka/kafka_ctl", 'run', $k->{dir}, 'AvroProduce',
		$k->{bootstrap}, $topic, $url, $file, @opts);
	my ($out, $err) = ('', '');
	IPC::Run::run(\@cmd, '<', \$in, '>', \$out, '2>', \$err)
	  or die "AvroProduce failed: $err$out";
	$out =~ s/\s+$//;
	note "AvroProduce: $out";
	return $out;
}

# avro_consume($k, $registry_url, $topic, $count, @options): the topic's
# messages as Apache Avro's Java library reads them (test/kafka/AvroConsume),
# one "PARTITION:OFFSET<TAB>RECORD" line each, in order.
sub avro_consume
{
	my ($k, $url, $topic, $count, @opts) = @_;
	my @cmd = ("$ENV{SSP_SRC}/test/kafka/kafka_ctl", 'run', $k->{dir}, 'AvroConsume',
		$k->{bootstrap}, $topic, $url, $count, @opts);
	my ($out, $err) = ('', '');
	IPC::Run::run(\@cmd, '>', \$out, '2>', \$err)
	  or die "AvroConsume failed: $err$out";
	return $out;
}

# proto_produce($k, $registry_url, $topic, $proto_text, \@lines, @options):
# messages encoded by Google's Protobuf Java library (test/kafka/Proto),
# each line a message in Protobuf's JSON form; --reference NAME=TEXT
# options are written to files first.  Returns "produced N schema ID".
sub proto_produce
{
	my ($k, $url, $topic, $proto, $lines, @opts) = @_;
	my $dir = PostgreSQL::Test::Utils::tempdir('proto');
	my $n = 0;
	my $write = sub {
		my $file = "$dir/" . $n++ . ".proto";
		open(my $fh, '>', $file) or die "$file: $!";
		print $fh $_[0];
		close($fh);
		return $file;
	};
	my @args;
	while (@opts)
	{
		my ($o, $v) = splice(@opts, 0, 2);
		if ($o eq '--reference')
		{
			my ($name, $text) = split(/=/, $v, 2);
			$v = "$name=" . $write->($text);
		}
		$v = $write->($v) if $o eq '--key-proto';
		push @args, $o, $v;
	}
	my $in = join('', map { "$_\n" } @$lines);
	my @cmd = ("$ENV{SSP_SRC}/test/kafka/kafka_ctl", 'run', $k->{dir}, 'Proto', 'produce',
		$k->{bootstrap}, $topic, $url, $write->($proto), @args);
	my ($out, $err) = ('', '');
	IPC::Run::run(\@cmd, '<', \$in, '>', \$out, '2>', \$err)
	  or die "Proto produce failed: $err$out";
	$out =~ s/\s+$//;
	note "Proto produce: $out";
	return $out;
}

# proto_consume($k, $registry_url, $topic, $count, @options): the topic's
# messages as Google's Protobuf Java library reads them (Proto consume),
# one "PARTITION:OFFSET<TAB>JSON" line each, in order.
sub proto_consume
{
	my ($k, $url, $topic, $count, @opts) = @_;
	my @cmd = ("$ENV{SSP_SRC}/test/kafka/kafka_ctl", 'run', $k->{dir}, 'Proto', 'consume',
		$k->{bootstrap}, $topic, $url, $count, @opts);
	my ($out, $err) = ('', '');
	IPC::Run::run(\@cmd, '>', \$out, '2>', \$err)
	  or die "Proto consume failed: $err$out";
	return $out;
}

END
{
	$_->{proc}->kill_kill for @registries;
	kill 'TERM', $_->{pid} for @brokers;
	waitpid($_->{pid}, 0) for @brokers;
	system("$ENV{SSP_SRC}/test/kafka/kafka_ctl", 'stop', $_->{dir}) for @kafkas;
}

1;
