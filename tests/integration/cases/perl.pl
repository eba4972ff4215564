# Integration case: perl hashes, regexes and string building. Keys are sorted
# before anything is printed, so perl's per-process hash seed cannot change
# the output.
use strict;
use warnings;
use Digest::MD5;

my %words;
for my $i (1 .. 120000) {
	my $w = sprintf("w%x-%s", $i * 7919 % 65536, ("ab", "cde", "fghi")[$i % 3]);
	$words{$w} .= chr(97 + $i % 26);
}
my $md5 = Digest::MD5->new;
my ($vowels, $long) = (0, 0);
for my $k (sort keys %words) {
	my $v = $words{$k};
	$vowels += () = $v =~ /[aeiou]/g;
	(my $t = $k) =~ s/([0-9a-f]+)-(\w+)/$2:$1/;
	$long++ if length($v) > 1;
	$md5->add($t, $v);
}
my @parts = split /-/, join("-", map { uc } (sort keys %words)[0 .. 999]);
my %by_len;
push @{ $by_len{length $_} }, $_ for @parts;
my $shape = join ",", map { "$_=" . scalar @{ $by_len{$_} } } sort { $a <=> $b } keys %by_len;
delete @words{ grep { /^w1/ } keys %words };
printf "perl keys=%d vowels=%d long=%d left=%d shape=%s md5=%s\n",
	scalar(@parts), $vowels, $long, scalar(keys %words), $shape, $md5->hexdigest;
