-- Base schema. Ranges and enumerations mirror the API contract, so that the
-- database refuses what the API refuses even if a check in the code is missed.

create table users (
  id serial primary key,
  email text not null check (char_length(email) between 3 and 254),
  password_hash text not null,
  name varchar(100) not null check (char_length(btrim(name)) > 0),
  role text not null default 'user' check (role in ('admin', 'user')),
  disabled boolean not null default false,
  last_login_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index users_email_lower_key on users (lower(email));
create index users_created_at_idx on users (created_at, id);

create table families (
  id serial primary key,
  name varchar(200) not null check (char_length(btrim(name)) > 0),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table family_members (
  family_id integer not null references families (id) on delete cascade,
  user_id integer not null references users (id) on delete cascade,
  role text not null check (role in ('owner', 'member', 'viewer')),
  joined_at timestamptz not null default now(),
  primary key (family_id, user_id)
);
create index family_members_user_idx on family_members (user_id, family_id);

create table sessions (
  id serial primary key,
  user_id integer not null references users (id) on delete cascade,
  user_agent text,
  created_at timestamptz not null default now(),
  last_used_at timestamptz not null default now(),
  expires_at timestamptz not null,
  revoked_at timestamptz
);
create index sessions_user_idx on sessions (user_id);

create table refresh_tokens (
  id serial primary key,
  session_id integer not null references sessions (id) on delete cascade,
  user_id integer not null references users (id) on delete cascade,
  token_hash text not null unique,
  replaces_id integer references refresh_tokens (id) on delete set null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  rotated_at timestamptz
);
create index refresh_tokens_session_idx on refresh_tokens (session_id);
create index refresh_tokens_user_idx on refresh_tokens (user_id);

create table invites (
  id serial primary key,
  family_id integer not null references families (id) on delete cascade,
  email text not null check (char_length(email) between 3 and 254),
  role text not null check (role in ('owner', 'member', 'viewer')),
  token_hash text not null unique,
  invited_by integer references users (id) on delete set null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  used_at timestamptz,
  used_by integer references users (id) on delete set null,
  revoked_at timestamptz
);
create index invites_family_idx on invites (family_id, lower(email));

-- A family with children cannot be deleted by accident: its children are
-- removed first, explicitly.
create table children (
  id serial primary key,
  family_id integer not null references families (id) on delete restrict,
  name varchar(200) not null check (char_length(btrim(name)) > 0),
  date_of_birth date not null,
  sex text not null check (sex in ('female', 'male', 'other')),
  avatar_name text unique,
  avatar_size_bytes bigint check (avatar_size_bytes >= 0),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index children_family_idx on children (family_id, name, id);

create table visits (
  id serial primary key,
  child_id integer not null references children (id) on delete cascade,
  date date not null,
  type text not null check (type in ('wellness', 'sick', 'injury', 'vision', 'dental')),
  provider varchar(200),
  notes text check (char_length(notes) <= 10000),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (id, child_id)
);
create index visits_child_date_idx on visits (child_id, date, id);
create index visits_child_type_idx on visits (child_id, type, date, id);

-- Links to a visit carry the child too, so a record can only point to a visit
-- of its own child. Deleting the visit keeps the record and clears the link.
create table measurements (
  id serial primary key,
  child_id integer not null references children (id) on delete cascade,
  visit_id integer,
  measured_at date not null,
  height_cm numeric check (height_cm between 20 and 250 and height_cm = round(height_cm, 2)),
  weight_kg numeric check (weight_kg between 0.2 and 250 and weight_kg = round(weight_kg, 3)),
  head_circumference_cm numeric check (head_circumference_cm between 15 and 80 and head_circumference_cm = round(head_circumference_cm, 2)),
  notes text check (char_length(notes) <= 10000),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check (height_cm is not null or weight_kg is not null or head_circumference_cm is not null),
  foreign key (visit_id, child_id) references visits (id, child_id) on delete set null (visit_id),
  unique (id, child_id)
);
create index measurements_child_measured_idx on measurements (child_id, measured_at, id);
create index measurements_visit_idx on measurements (visit_id) where visit_id is not null;

create table medical_events (
  id serial primary key,
  child_id integer not null references children (id) on delete cascade,
  visit_id integer,
  date date not null,
  type text not null check (type in ('vaccine', 'procedure', 'medication')),
  name varchar(200) not null check (char_length(btrim(name)) > 0),
  description text check (char_length(description) <= 10000),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  foreign key (visit_id, child_id) references visits (id, child_id) on delete set null (visit_id)
);
create index medical_events_child_date_idx on medical_events (child_id, date, id);
create index medical_events_visit_idx on medical_events (visit_id) where visit_id is not null;

create table illnesses (
  id serial primary key,
  child_id integer not null references children (id) on delete cascade,
  visit_id integer,
  start_date date not null,
  end_date date check (end_date >= start_date),
  diagnosis text check (char_length(diagnosis) <= 10000),
  symptoms text check (char_length(symptoms) <= 10000),
  medications text check (char_length(medications) <= 10000),
  temperature_c numeric check (temperature_c between 34 and 43 and temperature_c = round(temperature_c, 2)),
  notes text check (char_length(notes) <= 10000),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  foreign key (visit_id, child_id) references visits (id, child_id) on delete set null (visit_id),
  unique (id, child_id)
);
create index illnesses_child_start_idx on illnesses (child_id, start_date, id);
create index illnesses_visit_idx on illnesses (visit_id) where visit_id is not null;

create table attachments (
  id serial primary key,
  child_id integer not null references children (id) on delete cascade,
  visit_id integer,
  measurement_id integer,
  illness_id integer,
  file_name varchar(255) not null,
  stored_name text not null unique,
  content_type text not null,
  size_bytes bigint not null check (size_bytes >= 0),
  created_at timestamptz not null default now(),
  foreign key (visit_id, child_id) references visits (id, child_id) on delete set null (visit_id),
  foreign key (measurement_id, child_id) references measurements (id, child_id) on delete set null (measurement_id),
  foreign key (illness_id, child_id) references illnesses (id, child_id) on delete set null (illness_id)
);
create index attachments_child_created_idx on attachments (child_id, created_at, id);
