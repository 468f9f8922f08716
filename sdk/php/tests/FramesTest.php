<?php
// Frame names from excimer traces (DESIGN §3), weighting by event count, stack depth.
declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use RootTrace\Frames;

final class FakeEntry
{
    public function __construct(private array $trace, private int $events)
    {
    }

    public function getTrace(): array
    {
        return $this->trace;
    }

    public function getEventCount(): int
    {
        return $this->events;
    }
}

final class FramesTest extends TestCase
{
    public function testNamesFollowDesignSection3(): void
    {
        $f = new Frames('/app');
        $this->assertSame('App\Cart::total', $f->name(['file' => '/app/src/Cart.php', 'line' => 3,
            'class' => 'App\Cart', 'function' => 'total']));
        $this->assertSame('src/lib.php.App\helper', $f->name(['file' => '/app/src/lib.php', 'line' => 9,
            'function' => 'App\helper']));
        $this->assertSame('src/lib.php.format_price', $f->name(['file' => '/app/src/lib.php',
            'function' => 'format_price']));
        $this->assertSame('App\Cart::{closure}', $f->name(['file' => '/app/src/Cart.php',
            'class' => 'App\Cart', 'function' => 'App\{closure}', 'closure_line' => 4]));
        $this->assertSame('index.php.{closure}', $f->name(['file' => '/app/index.php',
            'function' => '{closure}', 'closure_line' => 2]));
        $this->assertSame('index.php', $f->name(['file' => '/app/index.php', 'line' => 12]));
        $this->assertSame('/usr/share/php/x.php.f', $f->name(['file' => '/usr/share/php/x.php', 'function' => 'f']));
        $this->assertSame('/apps/other.php', $f->name(['file' => '/apps/other.php']));
        $this->assertSame('[internal].strlen', $f->name(['function' => 'strlen']));
        $this->assertSame('a:b.php.f', $f->name(['file' => '/app/a;b.php', 'function' => 'f']));
        $this->assertSame('a b c.php.f', $f->name(['file' => "/app/a\tb\nc.php", 'function' => 'f']));
    }

    public function testRootIsTheNearestComposerJsonElseTheScriptDirectory(): void
    {
        $d = T::tmpdir('root');
        mkdir("$d/proj/public/x", 0700, true);
        touch("$d/proj/composer.json");
        touch("$d/proj/public/x/index.php");
        $this->assertSame(realpath("$d/proj"), Frames::findRoot("$d/proj/public/x/index.php"));
        unlink("$d/proj/composer.json");
        $this->assertSame(realpath("$d/proj/public/x"), Frames::findRoot("$d/proj/public/x/index.php"));
        $this->assertSame('', Frames::findRoot(''));
        T::rmrf($d);
    }

    public function testStacksWithTheSdksOwnFramesAreDropped(): void
    {
        $f = new Frames('/app');
        $app = ['file' => '/app/a.php', 'function' => 'work'];
        $main = ['file' => '/app/a.php'];
        $log = [new FakeEntry([$app, $main], 3),
            new FakeEntry([['file' => '/x/Http.php', 'class' => 'RootTrace\\Http', 'function' => 'read'],
                ['class' => 'RootTrace\\Agent', 'function' => 'checkpoint'], $main], 5),
            new FakeEntry([['function' => 'fread'], ['function' => 'RootTrace\\helper'], $main], 2),
            new FakeEntry([['class' => 'RootTraceApp\\X', 'function' => 'f'], $main], 1)];
        $this->assertSame(['a.php;a.php.work' => [3, 30], 'a.php;RootTraceApp\\X::f' => [1, 10]],
            $f->aggregate($log, 10, 256, 100));
    }

    public function testAggregateWeightsByEventCountAndKeepsTheLeafSide(): void
    {
        $f = new Frames('/app');
        $leaf = ['file' => '/app/a.php', 'function' => 'leaf'];
        $mid = ['file' => '/app/a.php', 'class' => 'C', 'function' => 'm'];
        $main = ['file' => '/app/a.php', 'line' => 1];
        $log = [new FakeEntry([$leaf, $mid, $main], 1), new FakeEntry([$leaf, $mid, $main], 20),
            new FakeEntry([$mid, $main], 3), new FakeEntry([$main], 0)];
        $agg = $f->aggregate($log, 10_000_000, 256, 100);
        $this->assertSame(['a.php;C::m;a.php.leaf' => [21, 210_000_000], 'a.php;C::m' => [3, 30_000_000]], $agg);
        $this->assertSame(['C::m;a.php.leaf' => [21, 210_000_000], 'a.php;C::m' => [3, 30_000_000]],
            $f->aggregate($log, 10_000_000, 2, 100));
        $this->assertSame(['a.php;C::m;a.php.leaf' => [21, 210_000_000], Frames::TRIMMED => [3, 30_000_000]],
            $f->aggregate($log, 10_000_000, 256, 1));
    }

    private function requireExcimer(): void
    {
        if (!extension_loaded('excimer')) {
            $this->markTestSkipped('ext-excimer not loaded (this pass runs without it)');
        }
    }

    public function testRealExcimerTracesUnderEveryKindOfFrame(): void
    {
        $this->requireExcimer();
        $d = T::tmpdir('frames');
        $code = <<<'PHP'
<?php
namespace Shop;
require getenv('RT_AUTOLOAD');
class Cart {
    public function total(): int { $x = 0; $e = CPU_NOW + 0.15; while (CPU_NOW < $e) { for ($i = 0; $i < 2000; $i++) { $x = ($x * 31 + $i) % 1000003; } } return $x; }
    public function viaClosure(): int { $f = function () { return $this->total(); }; return $f(); }
}
function checkout(): int { return (new Cart())->viaClosure(); }
$p = new \ExcimerProfiler();
$p->setPeriod(0.01);
$p->setEventType(EXCIMER_CPU);
$p->start();
checkout();
(function () { $x = 0; $e = CPU_NOW + 0.1; while (CPU_NOW < $e) { for ($i = 0; $i < 2000; $i++) { $x = ($x * 31 + $i) % 1000003; } } })();
$p->stop();
$agg = (new \RootTrace\Frames(__DIR__))->aggregate($p->getLog(), 10000000, 256, 1000);
echo json_encode($agg);
PHP;
        [$rc, $out, $err] = T::php(str_replace('CPU_NOW', T::CPU_NOW, $code), [], [], $d, ['RT_AUTOLOAD' => realpath(T::SRC) . '/autoload.php']);
        $agg = json_decode($out, true);
        $this->assertSame(0, $rc, $err);
        $this->assertIsArray($agg, $out . $err);
        $stacks = array_keys($agg);
        $want = 'Shop\Cart::{closure};Shop\Cart::total';
        $hit = array_values(array_filter($stacks, static fn($s) => str_ends_with($s, $want)));
        $this->assertNotEmpty($hit, implode("\n", $stacks));
        $this->assertMatchesRegularExpression('/^child-\w+\.php;child-\w+\.php\.Shop\\\\checkout;Shop\\\\Cart::viaClosure;'
            . preg_quote($want, '/') . '$/', $hit[0]);
        $this->assertNotEmpty(preg_grep('/^child-\w+\.php;child-\w+\.php\.Shop\\\\\{closure\}$/', $stacks), implode("\n", $stacks));
        $events = array_sum(array_column($agg, 0));
        $this->assertGreaterThanOrEqual(15, $events); // ~25 of 10 ms CPU
        $this->assertLessThanOrEqual(35, $events);
        foreach ($agg as [$n, $ns]) {
            $this->assertSame($n * 10_000_000, $ns);
        }
        T::rmrf($d);
    }

    public function testAUsleepUnderRealTimeIsOneEntryWithManyEvents(): void
    {
        $this->requireExcimer();
        $p = new ExcimerProfiler();
        $p->setPeriod(0.01);
        $p->setEventType(EXCIMER_REAL);
        $p->start();
        self::sleepy();
        $p->stop();
        // Usually one entry carrying ~30 events; on a slow host the sleep can be split into
        // several entries. What the SDK relies on is the events' sum (stack x event count).
        $events = 0;
        foreach ($p->getLog() as $e) {
            if (($e->getTrace()[0]['function'] ?? '') === 'sleepy') {
                $events += $e->getEventCount();
            }
        }
        $this->assertGreaterThanOrEqual(25, $events); // 300 ms / 10 ms
        $agg = (new Frames(__DIR__))->aggregate($p->getLog(), 10_000_000, 256, 1000);
        $key = array_values(preg_grep('/FramesTest::sleepy$/', array_keys($agg)))[0];
        $this->assertGreaterThanOrEqual(25, $agg[$key][0]);
        $this->assertSame($agg[$key][0] * 10_000_000, $agg[$key][1]);
    }

    private static function sleepy(): void
    {
        usleep(300_000);
    }
}
