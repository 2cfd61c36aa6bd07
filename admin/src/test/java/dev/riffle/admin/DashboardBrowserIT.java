package dev.riffle.admin;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobState;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.test.RiffleTest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.condition.EnabledIf;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;

/**
 * The dashboard in a real browser: headless Chromium from the system package driven by Selenium through the system
 * chromedriver (nothing is downloaded). Loads the page, sees a queue's counts change after an enqueue and the chart
 * draw completions, retries a DLQ job with a click and the in-page confirmation, and checks that it left the DLQ in
 * the page and through the API; takes a screenshot (target/dashboard.png, and the README's picture when
 * {@code -Driffle.dashboard.screenshot=docs/images/dashboard.png} asks). Without chromium and chromedriver the class
 * is skipped, unless {@code RIFFLE_REQUIRE_BROWSER=1} (CI) makes that a failure.
 */
@RiffleTest
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class) // the README's picture shows the first test's queues only
@EnabledIf(value = "browserOrRequired", disabledReason = "no headless browser: /usr/bin/chromium and "
        + "/usr/bin/chromedriver must both be installed (apt-get install chromium chromium-driver); skipped, "
        + "RIFFLE_REQUIRE_BROWSER=1 fails instead")
class DashboardBrowserIT {

    static final Path CHROMIUM = Path.of(System.getenv().getOrDefault("RIFFLE_CHROMIUM", "/usr/bin/chromium"));
    static final Path CHROMEDRIVER = Path.of(System.getenv().getOrDefault("RIFFLE_CHROMEDRIVER", "/usr/bin/chromedriver"));
    private static final Duration WAIT = Duration.ofSeconds(15);
    // The first rendering pays for a cold browser, a cold HTTP server and the first status queries at once; on a
    // loaded 2-core CI machine that once took longer than WAIT (session 17), so it alone gets more time.
    private static final Duration FIRST_RENDERING = Duration.ofSeconds(60);

    private Riffle riffle;
    private DisposableServer server;
    private DisposableServer readOnly;
    private ChromeDriverService service;
    private WebDriver driver;
    private Path profile;
    private final List<Disposable> workers = new ArrayList<>();

    static boolean browserPresent() {
        return Files.isExecutable(CHROMIUM) && Files.isExecutable(CHROMEDRIVER);
    }

    // Decided before the class's schema and engine are made, so a skip costs nothing.
    static boolean browserOrRequired() {
        return browserPresent() || "1".equals(System.getenv("RIFFLE_REQUIRE_BROWSER"));
    }

    @BeforeAll
    void start(Riffle riffle) throws IOException {
        if (!browserPresent()) {
            throw new AssertionError("no headless browser: " + CHROMIUM + " and " + CHROMEDRIVER + " must both be "
                    + "installed (apt-get install chromium chromium-driver); RIFFLE_REQUIRE_BROWSER=1 makes this a failure");
        }
        this.riffle = riffle;
        AdminHttpOptions.Builder options = AdminHttpOptions.builder().port(0).sampleInterval(Duration.ofMillis(250))
                .history(Duration.ofMinutes(1));
        server = RiffleAdminHttp.start(riffle, options.build()).block(Http.TIMEOUT);
        readOnly = RiffleAdminHttp.start(riffle, options.readOnly(true).build()).block(Http.TIMEOUT);

        // the system chromedriver, named outright: Selenium Manager never runs, so nothing is downloaded
        System.setProperty("webdriver.chrome.driver", CHROMEDRIVER.toString());
        service = new ChromeDriverService.Builder().usingDriverExecutable(CHROMEDRIVER.toFile()).usingAnyFreePort()
                .build();
        profile = Files.createTempDirectory("riffle-chromium");
        ChromeOptions chrome = new ChromeOptions();
        chrome.setBinary(CHROMIUM.toFile());
        chrome.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--window-size=1360,1180", "--user-data-dir=" + profile);
        driver = new ChromeDriver(service, chrome);
    }

    @AfterAll
    void stop() throws IOException {
        workers.forEach(Disposable::dispose);
        if (driver != null) {
            driver.quit();
        }
        if (service != null) {
            service.stop();
        }
        for (DisposableServer s : new DisposableServer[] {server, readOnly}) {
            if (s != null) {
                s.disposeNow();
            }
        }
        if (profile != null) {
            try (var files = Files.walk(profile)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    /** The number a cell or attribute shows, or -1 while the page is between two renderings (empty or absent). */
    private static long number(@org.jspecify.annotations.Nullable String text) {
        return text == null || !text.matches("[0-9]{1,18}") ? -1 : Long.parseLong(text);
    }

    private String cell(String queue, String field) {
        List<org.openqa.selenium.WebElement> cells = driver.findElements(
                By.cssSelector("#queues tr[data-queue='" + queue + "'] td[data-field='" + field + "']"));
        try {
            return cells.isEmpty() ? "" : cells.get(0).getText();
        } catch (StaleElementReferenceException redrawn) {
            return "";
        }
    }

    // The page redraws a table when its data changes; an element found just before a redraw goes stale, so a
    // click or read is retried on the fresh one.
    private void click(By by) {
        waiting().ignoring(StaleElementReferenceException.class).until(d -> {
            d.findElement(by).click();
            return true;
        });
    }

    private String text(By by) {
        return waiting().ignoring(StaleElementReferenceException.class).until(d -> d.findElement(by).getText());
    }

    // What the page shows where it reports a failed poll ("API error: ..."), for a failure message.
    private String sampledLine() {
        try {
            return driver.findElement(By.id("sampled")).getText();
        } catch (RuntimeException gone) {
            return "(unreadable: " + gone.getClass().getSimpleName() + ")";
        }
    }

    private WebDriverWait waiting() {
        return waiting(WAIT);
    }

    private WebDriverWait waiting(Duration timeout) {
        return new WebDriverWait(driver, timeout, Duration.ofMillis(100));
    }

    @Test
    @Order(1)
    void countsMoveAfterAnEnqueueAndADlqJobIsRetriedWithAClick() throws IOException {
        String base = "http://127.0.0.1:" + server.port() + "/riffle/";
        driver.get(base);
        waiting(FIRST_RENDERING)
                .withMessage(() -> "no first rendering; the page's status line says: " + sampledLine())
                .until(d -> d.findElement(By.tagName("body")).getAttribute("data-refreshed") != null);
        assertThat(driver.getTitle()).isEqualTo("Riffle dashboard");

        // a queue's counts change in the page after an enqueue
        riffle.client().enqueueMany(List.of(NewJob.builder("report.render").queue("reports").build(),
                NewJob.builder("report.render").queue("reports").build())).block(Http.TIMEOUT);
        waiting().until(d -> cell("reports", "available").equals("2"));
        riffle.client().enqueue(NewJob.builder("report.render").queue("reports").build()).block(Http.TIMEOUT);
        waiting().until(d -> cell("reports", "available").equals("3"));

        // throughput: a worker completes a stream of jobs, the table's counts and rate and the chart follow
        JobHandler ok = job -> Mono.delay(Duration.ofMillis(5)).then(Mono.empty());
        workers.add(riffle.work(Map.of("email.send", ok, "report.render", ok), 4, "emails", "reports").subscribe());
        workers.add(Flux.range(0, 60)
                .concatMap(i -> Mono.delay(Duration.ofMillis(40)).then(riffle.client().enqueue(
                        NewJob.builder("email.send").queue("emails").args("{\"to\":\"user" + i + "@example.com\"}")
                                .build())))
                .subscribe());
        waiting().until(d -> cell("reports", "completed").equals("3") && cell("reports", "available").equals("0"));
        waiting().until(d -> number(cell("emails", "completed")) >= 20);
        waiting().until(d -> number(driver.findElement(By.cssSelector("#chart-throughput polyline"))
                .getAttribute("data-points")) > 3);

        // a job fails into the DLQ (max attempts 1); its row shows up with the handler's error
        long dead = riffle.client().enqueue(NewJob.builder("invoice.charge").queue("billing").maxAttempts(1)
                .args("{\"invoice\":4711}").build()).block(Http.TIMEOUT);
        JobHandler failing = job -> Mono.error(new IllegalStateException("card declined: insufficient funds"));
        Disposable billing = riffle.work(Map.of("invoice.charge", failing), 1, "billing").subscribe();
        workers.add(billing);
        By deadRow = By.cssSelector("#dlq tr[data-job='" + dead + "']");
        waiting().until(ExpectedConditions.presenceOfElementLocated(deadRow));
        billing.dispose();
        assertThat(riffle.admin().job(dead).block(Http.TIMEOUT).state()).isEqualTo(JobState.DLQ);
        assertThat(text(deadRow)).contains("invoice.charge").contains("card declined");
        waiting().until(d -> cell("billing", "dlq").equals("1"));
        screenshot("dashboard.png", true);

        // retry: the button opens the in-page confirmation; only its Confirm sends the POST
        By retry = By.cssSelector("button[data-action='retry'][data-job='" + dead + "']");
        click(retry);
        waiting().until(ExpectedConditions.visibilityOfElementLocated(By.id("confirm")));
        assertThat(driver.findElement(By.id("confirm-text")).getText()).contains("Retry job " + dead);
        driver.findElement(By.id("confirm-cancel")).click();
        waiting().until(ExpectedConditions.invisibilityOfElementLocated(By.id("confirm")));
        assertThat(riffle.admin().job(dead).block(Http.TIMEOUT).state()).as("cancelled: nothing sent").isEqualTo(JobState.DLQ);

        click(retry);
        waiting().until(ExpectedConditions.elementToBeClickable(By.id("confirm-ok"))).click();
        waiting().until(ExpectedConditions.numberOfElementsToBe(deadRow, 0));
        assertThat(riffle.admin().job(dead).block(Http.TIMEOUT).state()).isEqualTo(JobState.AVAILABLE);
        Http.Response api = new Http(server).get("/riffle/api/jobs/" + dead);
        assertThat(api.json().get("state").asString()).as("left the DLQ, per the API").isEqualTo("available");
        waiting().until(d -> cell("billing", "dlq").equals("0"));

        // job detail: attempts and the error history
        driver.findElement(By.name("id")).sendKeys(Long.toString(dead));
        driver.findElement(By.id("lookup")).click();
        waiting().until(d -> d.findElement(By.id("job-detail")).isDisplayed()
                && d.findElement(By.id("job-detail")).getText().contains("card declined"));
        assertThat(text(By.id("job-detail"))).contains("Job " + dead).contains("invoice.charge")
                .contains("attempt 1");
        screenshot("dashboard-after-retry.png", false);
    }

    @Test
    @Order(2)
    void theReadOnlyPageDrawsNoActionButton() {
        riffle.client().enqueue(NewJob.builder("audit.write").queue("audit").build()).block(Http.TIMEOUT);
        long dead = riffle.client().enqueue(NewJob.builder("audit.fail").queue("audit_dlq").build()).block(Http.TIMEOUT);
        riffle.subscribe("audit_dlq").take(1).concatMap(j -> j.fail("bad record")).blockLast(Http.TIMEOUT);
        driver.get("http://127.0.0.1:" + readOnly.port() + "/riffle/");
        waiting().until(d -> cell("audit", "available").equals("1"));
        waiting().until(ExpectedConditions.presenceOfElementLocated(By.cssSelector("#dlq tr[data-job='" + dead + "']")));
        assertThat(driver.findElement(By.id("mode")).isDisplayed()).isTrue();
        assertThat(driver.findElements(By.cssSelector("button[data-action]"))).isEmpty();
    }

    /** Saves what the browser shows to target/, and to the README's picture when asked (and {@code readme}). */
    private void screenshot(String name, boolean readme) throws IOException {
        byte[] png = ((TakesScreenshot) driver).getScreenshotAs(OutputType.BYTES);
        Files.createDirectories(Path.of("target"));
        Files.write(Path.of("target", name), png);
        String wanted = System.getProperty("riffle.dashboard.screenshot", "");
        if (readme && !wanted.isBlank()) {
            // relative to the repository root (the tests run in admin/)
            Path target = Path.of(wanted).isAbsolute() ? Path.of(wanted)
                    : Path.of("").toAbsolutePath().getParent().resolve(wanted);
            Files.createDirectories(target.getParent());
            Files.write(target, png);
        }
        assertThat(png.length).isGreaterThan(10_000);
    }
}
