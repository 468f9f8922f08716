<?php
// The upload size cap (DESIGN §5: upload <= 4 MiB, compiled in; docs/security.md): a profile
// whose gzip body would be larger has its lightest stacks folded into one "(trimmed)" stack
// until it fits.
declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use RootTrace\Frames;
use RootTrace\Limits;
use RootTrace\Spool;
use RootTrace\Uploader;

final class UploadLimitTest extends TestCase
{
    private string $dir;

    protected function setUp(): void
    {
        $this->dir = T::tmpdir('upload-limit');
    }

    protected function tearDown(): void
    {
        T::rmrf($this->dir);
    }

    public function testTheCompiledCapIsFourMiB(): void
    {
        $this->assertSame(4 * 1024 * 1024, Limits::UPLOAD_MAX_BYTES);
        $this->assertSame(Limits::UPLOAD_MAX_BYTES, (new Limits())->uploadMaxBytes);
    }

    public function testAnOversizedProfileIsTrimmedUnderTheCap(): void
    {
        $lim = new Limits(uploadMaxBytes: 16 * 1024);
        $up = new Uploader(new Spool($this->dir . '/s', $lim), $lim);
        $stacks = [];
        for ($i = 0; $i < 3000; $i++) {
            $frames = [];
            for ($j = 0; $j < 12; $j++) {
                $frames[] = 'm.f' . bin2hex(pack('nnC', $i, $i * 7 + $j, $j));
            }
            $stacks[implode(Frames::SEP, $frames)] = [1, (3000 - $i) * 1000];
        }
        $full = $up->body('cpu', 1, 10_000_000_000, 10_000_000, $stacks);
        $this->assertNotNull($full);
        $unlimited = new Limits();
        $whole = (new Uploader(new Spool($this->dir . '/u', $unlimited), $unlimited))
            ->body('cpu', 1, 10_000_000_000, 10_000_000, $stacks);
        $this->assertGreaterThan(16 * 1024, strlen($whole), 'the test profile is over the cap');
        $this->assertLessThanOrEqual(16 * 1024, strlen($full));
        $raw = gzdecode($full);
        $this->assertStringContainsString(Frames::TRIMMED, $raw);
        // the heaviest stack is kept by name; a light one is folded away
        $this->assertStringContainsString('m.f' . bin2hex(pack('nnC', 0, 11, 11)), $raw);
        $this->assertStringNotContainsString('m.f' . bin2hex(pack('nnC', 2999, 2999 * 7 + 11, 11)), $raw);
    }
}
