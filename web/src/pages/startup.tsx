import { useEffect, useState } from 'preact/hooks';
import { useSetDockerImage, useSetVariable, useStartup, type EggVariable } from '../api/startup';
import { ErrorText, Loading } from '../components/ui';
import { useServer } from '../lib/server-context';

/** Startup (docs/reference/eggs-and-installs.md): the startup command, each egg variable with its own save and error, and the image. */
export function StartupSection() {
  const { id, server, permissions } = useServer();
  const startup = useStartup(id, permissions.can('startup.read'));
  if (!permissions.can('startup.read')) return <p class="muted">You may not see this server's startup settings.</p>;
  if (startup.isPending) return <Loading what="the startup settings" />;
  if (startup.isError) return <ErrorText error={startup.error} />;
  const { variables, meta } = startup.data;
  return (
    <>
      <section class="card stack" aria-labelledby="startup-command-title">
        <h3 id="startup-command-title">Startup command</h3>
        <pre class="mono startup-command" aria-label="Startup command">
          {meta.startup_command || 'None: this server has no process.'}
        </pre>
      </section>
      <ImagePicker images={meta.docker_images} current={server.attributes.docker_image ?? 'host'} />
      <div class="section-head">
        <h3>Variables</h3>
      </div>
      {variables.length === 0 ? (
        <p class="muted">This server has no egg variables.</p>
      ) : (
        <div class="grid-2">
          {variables.map((variable) => (
            <VariableCard key={variable.env_variable} variable={variable} canEdit={permissions.can('startup.update')} />
          ))}
        </div>
      )}
    </>
  );
}

function VariableCard({ variable, canEdit }: { variable: EggVariable; canEdit: boolean }) {
  const { id } = useServer();
  const save = useSetVariable(id);
  const stored = variable.server_value ?? variable.default_value;
  const [value, setValue] = useState(stored);
  useEffect(() => setValue(stored), [stored]);
  const editable = canEdit && variable.is_editable;
  const errorId = `variable-${variable.env_variable}-error`;
  return (
    <form
      class="card stack"
      aria-label={variable.name}
      onSubmit={(event) => {
        event.preventDefault();
        save.mutate({ key: variable.env_variable, value });
      }}
    >
      <label>
        {variable.name}
        <input
          class="mono"
          value={value}
          disabled={!editable}
          aria-invalid={save.isError ? 'true' : undefined}
          aria-describedby={save.isError ? errorId : undefined}
          onInput={(event) => setValue(event.currentTarget.value)}
        />
      </label>
      <p class="muted small">
        {variable.description} <span class="mono">{`{{${variable.env_variable}}}`}</span>
        {variable.is_editable ? '' : ' · read-only'}
      </p>
      <div id={errorId}>
        <ErrorText error={save.error} />
      </div>
      <div class="actions">
        {save.isSuccess && value === stored && (
          <span class="muted" role="status">
            Saved
          </span>
        )}
        <button type="submit" class="primary" disabled={!editable || save.isPending || value === stored}>
          Save {variable.name}
        </button>
      </div>
    </form>
  );
}

function ImagePicker({ images, current }: { images: Record<string, string>; current: string }) {
  const { id, permissions } = useServer();
  const setImage = useSetDockerImage(id);
  const [chosen, setChosen] = useState(current);
  useEffect(() => setChosen(current), [current]);
  const entries = Object.entries(images);
  const listed = entries.some(([, image]) => image === current);
  return (
    <form
      class="card stack"
      aria-labelledby="image-title"
      onSubmit={(event) => {
        event.preventDefault();
        setImage.mutate(chosen);
      }}
    >
      <h3 id="image-title">Image</h3>
      {entries.length === 0 ? (
        <p class="muted">
          This server runs on <span class="mono">{current}</span>; it has no egg images to choose from.
        </p>
      ) : (
        <>
          <label>
            Image
            <select
              value={chosen}
              disabled={!permissions.can('startup.docker-image')}
              onChange={(event) => setChosen(event.currentTarget.value)}
            >
              {!listed && <option value={current}>{current} (set by an administrator)</option>}
              {entries.map(([label, image]) => (
                <option key={image} value={image}>
                  {label} ({image})
                </option>
              ))}
            </select>
          </label>
          <p class="muted small">Used from the next start.</p>
          <ErrorText error={setImage.error} />
          <div class="actions">
            {setImage.isSuccess && chosen === current && (
              <span class="muted" role="status">
                Saved
              </span>
            )}
            <button
              type="submit"
              class="primary"
              disabled={!permissions.can('startup.docker-image') || setImage.isPending || chosen === current}
            >
              Save image
            </button>
          </div>
        </>
      )}
    </form>
  );
}
