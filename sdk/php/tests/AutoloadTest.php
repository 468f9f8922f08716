<?php
// The autoloader without Composer (src/autoload.php) names the SDK's classes instead of
// looking for their files: its list must be src/'s files, no more, no fewer.
declare(strict_types=1);

namespace RootTrace\Tests;

use PHPUnit\Framework\TestCase;

final class AutoloadTest extends TestCase
{
    public function testEveryClassOfSrcLoadsAndNothingElseDoes(): void
    {
        $src = realpath(__DIR__ . '/../src');
        $names = [];
        foreach (glob($src . '/*.php') as $f) {
            if (basename($f) !== 'autoload.php') {
                $names[] = basename($f, '.php');
            }
        }
        $this->assertGreaterThan(10, count($names));
        // In a fresh PHP: each class of src/ loads through the autoloader, and a name of
        // the namespace with no file, or a path, loads nothing.
        $code = '<?php require ' . var_export($src . '/autoload.php', true) . ';'
            . '$out = [];'
            . 'foreach (' . var_export($names, true) . ' as $n) {'
            . '  $c = "RootTrace\\\\" . $n;'
            . '  $out[$n] = class_exists($c) || interface_exists($c) || enum_exists($c);'
            . '}'
            . '$out["Missing"] = class_exists("RootTrace\\\\Missing");'
            . '$out["../src/Agent"] = class_exists("RootTrace\\\\../src/Agent");'
            . 'echo json_encode($out);';
        $file = tempnam(sys_get_temp_dir(), 'rt-autoload-');
        file_put_contents($file, $code);
        try {
            exec(escapeshellarg(PHP_BINARY) . ' ' . escapeshellarg($file) . ' 2>&1', $lines, $rc);
        } finally {
            unlink($file);
        }
        $this->assertSame(0, $rc, implode("\n", $lines));
        $got = json_decode(implode("\n", $lines), true);
        $want = array_fill_keys($names, true) + ['Missing' => false, '../src/Agent' => false];
        $this->assertSame($want, $got, 'src/autoload.php names every class of src/, no other');
    }
}
